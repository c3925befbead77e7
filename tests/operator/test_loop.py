"""The loop runs a handful of cycles for a burst of changes, and periodically when idle."""

from __future__ import annotations

import asyncio

from phalanx.operator.loop import SchedulingLoop


async def test_a_burst_of_a_thousand_changes_causes_few_cycles():
    cycles: list[int] = []

    async def cycle() -> None:
        cycles.append(1)
        await asyncio.sleep(0.05)

    loop = SchedulingLoop(cycle, debounce=0.05, max_delay=0.5, period=60)
    loop.ready.set()
    task = asyncio.create_task(loop.run())
    for _ in range(1000):
        loop.poke()
        await asyncio.sleep(0.0005)
    await asyncio.sleep(0.3)
    task.cancel()
    assert 1 <= len(cycles) <= 10


async def test_idle_loop_still_cycles_periodically():
    cycles: list[int] = []

    async def cycle() -> None:
        cycles.append(1)

    loop = SchedulingLoop(cycle, debounce=0.01, max_delay=0.1, period=0.05)
    loop.ready.set()
    task = asyncio.create_task(loop.run())
    await asyncio.sleep(0.3)
    task.cancel()
    assert len(cycles) >= 2


async def test_a_failing_cycle_does_not_stop_the_loop():
    calls: list[int] = []

    second = asyncio.Event()

    async def cycle() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")
        second.set()

    loop = SchedulingLoop(cycle, debounce=0.01, max_delay=0.1, period=0.05)
    loop.ready.set()
    task = asyncio.create_task(loop.run())
    try:  # a generous bound: the machine may be busy; only "it ran again" matters
        await asyncio.wait_for(second.wait(), timeout=30)
    finally:
        task.cancel()
    assert len(calls) >= 2 and loop.errors == 0


async def test_nothing_runs_before_the_cache_is_ready():
    calls: list[int] = []

    async def cycle() -> None:
        calls.append(1)

    loop = SchedulingLoop(cycle, debounce=0.01, max_delay=0.1, period=0.01)
    task = asyncio.create_task(loop.run())
    loop.poke()
    await asyncio.sleep(0.1)
    task.cancel()
    assert calls == []
