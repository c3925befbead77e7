"""The loop runs a handful of cycles for a burst of changes, and periodically when idle.

Time is a `ManualClock` the tests advance: nothing here waits for time to pass.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from manual_clock import ManualClock, turns
from phalanx.operator.loop import SchedulingLoop


def start(loop: SchedulingLoop) -> asyncio.Task[None]:
    loop.ready.set()
    return asyncio.create_task(loop.run())


def counting(calls: list[float], clock: ManualClock,
             body: Callable[[], Awaitable[None]] | None = None) -> Callable[[], Awaitable[None]]:
    async def cycle() -> None:
        calls.append(clock.now())
        if body is not None:
            await body()

    return cycle


async def test_a_burst_of_a_thousand_changes_causes_few_cycles():
    clock, cycles = ManualClock(), []
    loop = SchedulingLoop(counting(cycles, clock, lambda: clock.sleep(0.05)), debounce=0.05,
                          max_delay=0.5, period=60, clock=clock)
    task = start(loop)
    for _ in range(1000):  # one change every 0.5 ms for half a second
        loop.poke()
        await clock.advance(0.0005)
    await clock.advance(0.3)
    task.cancel()
    assert 1 <= len(cycles) <= 3
    assert cycles[0] <= 0.5 + 0.05 + 1e-9  # a steady stream gets a cycle within max_delay


async def test_changes_are_debounced_into_one_cycle_after_a_quiet_period():
    clock, cycles = ManualClock(), []
    loop = SchedulingLoop(counting(cycles, clock), debounce=0.2, max_delay=1.0, period=60,
                          clock=clock)
    task = start(loop)
    for _ in range(5):
        loop.poke()
        await clock.advance(0.05)
    assert cycles == []  # still within the quiet period after the last change
    await clock.advance(0.5)
    task.cancel()
    assert len(cycles) == 1


async def test_idle_loop_still_cycles_periodically():
    clock, cycles = ManualClock(), []
    loop = SchedulingLoop(counting(cycles, clock), debounce=0.01, max_delay=0.1, period=5,
                          clock=clock)
    task = start(loop)
    await clock.advance(4.9)
    assert cycles == []
    await clock.advance(10.2)
    task.cancel()
    assert cycles == [5.0, 10.0, 15.0]


async def test_a_failing_cycle_does_not_stop_the_loop():
    clock, calls = ManualClock(), []

    async def fail_once() -> None:
        if len(calls) == 1:
            raise RuntimeError("boom")

    loop = SchedulingLoop(counting(calls, clock, fail_once), debounce=0.01, max_delay=0.1,
                          period=1, clock=clock)
    task = start(loop)
    await clock.advance(1.0)
    assert len(calls) == 1 and loop.errors == 1
    await clock.advance(3.0)  # waits min(period, 0.5 * 2**errors), then cycles again
    task.cancel()
    assert len(calls) >= 2 and loop.errors == 0


async def test_nothing_runs_before_the_cache_is_ready():
    clock, calls = ManualClock(), []
    loop = SchedulingLoop(counting(calls, clock), debounce=0.01, max_delay=0.1, period=0.01,
                          clock=clock)
    task = asyncio.create_task(loop.run())
    loop.poke()
    await clock.advance(10)
    assert calls == []
    loop.ready.set()
    await turns()
    await clock.advance(0.05)
    task.cancel()
    assert calls


class Writes:
    """Writes in flight as the binder counts them: `room()` returns once they are drained."""

    def __init__(self, in_flight: int, high_water: int) -> None:
        self.in_flight = in_flight
        self.high_water = high_water
        self.drained = asyncio.Event()

    async def room(self) -> None:
        await self.drained.wait()

    def crowded(self) -> bool:
        return self.in_flight > self.high_water

    def drain(self) -> None:
        self.in_flight = 0
        self.drained.set()


def draining_loop(clock: ManualClock, cycles: list[float], writes: Writes,
                  cycle_seconds: float = 0.0) -> SchedulingLoop:
    return SchedulingLoop(counting(cycles, clock, lambda: clock.sleep(cycle_seconds)),
                          debounce=0.1, max_delay=0.5, period=60, room=writes.room,
                          crowded=writes.crowded, clock=clock)


async def test_while_writes_drain_a_change_waits_for_them_but_an_arrival_does_not():
    clock, cycles, writes = ManualClock(), [], Writes(in_flight=500, high_water=1000)
    loop = draining_loop(clock, cycles, writes)
    task = start(loop)
    loop.poke()  # e.g. a pod bound: nothing new to decide
    await clock.advance(5)
    assert cycles == []
    loop.arrive()  # a gang submitted: decided now, queued behind the writes
    await clock.advance(0.2)
    assert cycles == [5.0]
    loop.poke()
    await clock.advance(5)
    assert cycles == [5.0]
    writes.drain()
    await clock.advance(0.2)
    task.cancel()
    assert len(cycles) == 2


async def test_arrivals_leave_at_least_a_cycle_s_length_between_cycles():
    clock, cycles, writes = ManualClock(), [], Writes(in_flight=500, high_water=1000)
    loop = draining_loop(clock, cycles, writes, cycle_seconds=2.0)
    task = start(loop)
    loop.arrive()
    await clock.advance(0.5)  # the first cycle starts at 0.1 and runs until 2.1
    loop.arrive()
    await clock.advance(10)
    task.cancel()
    assert cycles[:2] == [0.1, 4.1]  # 2.1 + its 2.0 s: cycles take at most half the time


async def test_arrivals_wait_for_the_writes_when_they_are_crowded():
    clock, cycles, writes = ManualClock(), [], Writes(in_flight=5000, high_water=1000)
    loop = draining_loop(clock, cycles, writes)
    task = start(loop)
    loop.arrive()
    await clock.advance(5)
    assert cycles == []
    writes.drain()
    await clock.advance(0.1)
    task.cancel()
    assert cycles == [5.0]


async def test_a_loop_told_to_starts_its_first_cycle_as_soon_as_the_cache_is_ready():
    clock, cycles = ManualClock(), []
    loop = SchedulingLoop(counting(cycles, clock), debounce=0.2, max_delay=1.0, period=60,
                          clock=clock, first_at_once=True)
    task = asyncio.create_task(loop.run())
    loop.poke()  # changes while the caches fill
    await clock.advance(10)
    assert cycles == []
    loop.ready.set()
    await turns()
    assert cycles == [10.0]  # no quiet period: the caches were just listed
    loop.poke()
    await clock.advance(0.1)
    assert cycles == [10.0]  # later changes are debounced as before
    await clock.advance(0.2)
    task.cancel()
    assert cycles == [10.0, 10.2]
