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
