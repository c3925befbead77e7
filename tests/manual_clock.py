"""A clock the test moves by hand (`phalanx.operator.clock.Clock`): sleepers wake when
the test advances time past their deadline, in deadline order, so no test waits for
time to pass."""

from __future__ import annotations

import asyncio
import heapq
import itertools

YIELDS = 20  # event-loop turns after each wake-up, for the woken tasks to run their course


class ManualClock:
    def __init__(self, start: float = 0.0) -> None:
        self.time = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def now(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.time + max(seconds, 0.0), next(self._order), future))
        await future

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:
        waiter = asyncio.ensure_future(event.wait())
        timer = asyncio.ensure_future(self.sleep(timeout))
        try:
            await asyncio.wait((waiter, timer), return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            timer.cancel()
        return event.is_set()

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking every sleeper whose deadline passes, in order."""
        end = self.time + seconds
        await turns()
        while self._sleepers and self._sleepers[0][0] <= end:
            deadline, _, future = heapq.heappop(self._sleepers)
            self.time = max(self.time, deadline)
            if not future.done():
                future.set_result(None)
            await turns()
        self.time = end
        await turns()


async def turns(count: int = YIELDS) -> None:
    """Let ready tasks run (no time passes)."""
    for _ in range(count):
        await asyncio.sleep(0)
