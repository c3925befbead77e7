"""The one scheduling loop: a cycle shortly after changes (debounced), and periodically.

Event handlers only call `poke()` (something changed) or `arrive()` (an object was added
or deleted: new work, or capacity freed). A burst of events during the quiet period, or
during a running cycle, folds into one following cycle; a steady stream still gets a
cycle every `max_delay` seconds.

While the writes of earlier cycles drain, a cycle waits for `room()` (the queue of writes
nearly empty), since deciding more only lengthens that queue: a backlog is decided once
and written, not re-decided while it is written. Arrivals are the exception: a gang
submitted while a long batch is written would otherwise wait for the whole batch before
it is even decided, and the next batch then holds everything that arrived meanwhile, so
batches (and every gang's latency) grow with any stall and never shrink while arrivals
keep pace with the writes (bench-5000 arrival mode: cycles 10-35 s apart, gang latency
p50 36.6 s against kube-scheduler's 8.1). So an arrival gets a cycle while writes drain,
within two limits: not before the last cycle's own duration has passed since it ended
(cycles take at most about half of the loop's time), and not while `crowded()` (so many
pods wait for their writes that a gang decided now would wait for them anyway; then
`room()` as before).
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
        crowded: Callable[[], bool] | None = None,
        first_at_once: bool = False,
    ) -> None:
        """`first_at_once`: the first cycle runs as soon as `ready` is set, without
        waiting for a change and its quiet period: once the caches are synced from
        their LISTs there is nothing to wait for (the operator's start, a failover)."""
        self._first_at_once = first_at_once
        self._cycle = cycle
        self._clock = clock or MonotonicClock()
        self._room = room  # returns when the writes started so far are nearly done
        self._crowded = crowded or (lambda: True)  # without it, arrivals wait for room too
        self._debounce = debounce
        self._max_delay = max_delay
        self._period = period
        self._dirty = asyncio.Event()
        self._arrived = asyncio.Event()
        self._last_end = float("-inf")
        self._last_seconds = 0.0
        self.ready = asyncio.Event()
        self.cycles = 0
        self.errors = 0
        self.pokes = 0

    def poke(self) -> None:
        self.pokes += 1
        self._dirty.set()

    def arrive(self) -> None:
        """An object added or deleted: worth a cycle even while earlier writes drain."""
        self._arrived.set()
        self.poke()

    async def run(self) -> None:
        await self.ready.wait()
        at_once = self._first_at_once
        while True:
            if not at_once:
                await self._wait_for_change()
                await self._wait_for_room()
            at_once = False
            self._arrived.clear()  # this cycle sees every change and arrival so far
            self._dirty.clear()
            started = self._clock.now()
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
            self._last_end = self._clock.now()
            self._last_seconds = self._last_end - started
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

    async def _wait_for_room(self) -> None:
        """Wait for `room()`, or for an arrival while the writes are not crowded."""
        if self._room is None:
            return
        while True:
            if self._arrived.is_set() and not self._crowded():
                await self._clock.sleep(self._last_end + self._last_seconds - self._clock.now())
                if not self._crowded():
                    return
            room = asyncio.ensure_future(self._room())
            arrival = asyncio.ensure_future(self._arrived.wait())
            try:
                await asyncio.wait((room, arrival), return_when=asyncio.FIRST_COMPLETED)
            finally:
                arrival.cancel()
                room.cancel()
            if room.done() and not room.cancelled():
                return
            if self._crowded():  # an arrival, but the writes are crowded: room as before
                await self._room()
                return
