"""Requests in flight, bounded, handed out a gang at a time.

A gang's pods are bound one request each (Kubernetes has no binding of several pods at
once), so "all or nothing" can only be approached by writing them as one burst. With a
slot per pod (a plain semaphore) a gang's requests queue behind, and interleave with,
other gangs' requests: a 128-pod gang at 32 in flight and 55 bindings per second took
over 2 s from its first binding to its last (bench-5000: 43 gangs seen partly bound).
Here a gang takes the slots for all its pods at once (at most `limit`), gangs in the
order they asked, and gives each slot back when it has no request left to send.
"""

from __future__ import annotations

import asyncio
import collections


class GangSlots:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.free = limit
        self._waiting: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    async def take(self, wanted: int) -> int:
        """Wait until `wanted` slots (at most `limit`) are free and no earlier gang waits;
        returns how many were taken."""
        count = max(1, min(wanted, self.limit))
        if not self._waiting and self.free >= count:
            self.free -= count
            return count
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((count, turn))
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.give(count)  # handed over just as the gang was cancelled
            else:
                self._waiting.remove((count, turn))
                self._wake()
            raise
        return count

    def give(self, count: int = 1) -> None:
        self.free += count
        self._wake()

    def _wake(self) -> None:
        while self._waiting and self._waiting[0][0] <= self.free:
            count, turn = self._waiting.popleft()
            self.free -= count
            turn.set_result(None)
