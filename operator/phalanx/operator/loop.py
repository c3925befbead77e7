"""The one scheduling loop: a cycle shortly after changes (debounced), and periodically.

Event handlers only call `poke()`. A burst of events during the quiet period, or
during a running cycle, folds into one following cycle; a steady stream still gets
a cycle every `max_delay` seconds, unless the writes of earlier cycles are still
queued: the next cycle waits for `room()`, and the events meanwhile fold into it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

from phalanx.operator.clock import Clock, MonotonicClock

log = structlog.get_logger("phalanx.operator")


class SchedulingLoop:
    def __init__(
        self,
        cycle: Callable[[], Awaitable[object]],
        debounce: float,
        max_delay: float,
        period: float,
        room: Callable[[], Awaitable[None]] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._cycle = cycle
        self._clock = clock or MonotonicClock()
        self._room = room  # returns when the writes started so far are nearly done
        self._debounce = debounce
        self._max_delay = max_delay
        self._period = period
        self._dirty = asyncio.Event()
        self.ready = asyncio.Event()
        self.cycles = 0
        self.errors = 0
        self.pokes = 0

    def poke(self) -> None:
        self.pokes += 1
        self._dirty.set()

    async def run(self) -> None:
        await self.ready.wait()
        while True:
            await self._wait_for_change()
            if self._room is not None:
                await self._room()
            try:
                await self._cycle()
            except asyncio.CancelledError:
                raise
            except Exception:
                self.errors += 1
                log.exception("cycle failed; retrying", errors=self.errors)
                await self._clock.sleep(min(self._period, 0.5 * 2 ** min(self.errors, 6)))
            else:
                self.errors = 0
            self.cycles += 1

    async def _wait_for_change(self) -> None:
        if not await self._clock.wait(self._dirty, self._period):
            return  # periodic cycle
        first = self._clock.now()
        while True:
            self._dirty.clear()
            await self._clock.sleep(self._debounce)
            if not self._dirty.is_set() or self._clock.now() - first >= self._max_delay:
                break
        self._dirty.clear()
