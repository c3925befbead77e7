"""Writes the scheduling loop does not wait for.

A cycle decides in a fraction of a second but its writes (bindings, status patches,
Events) take seconds on a busy API server. Waiting for them stalled the loop: pods that
arrived meanwhile waited for the whole write phase before the next decision. The pods
of a gang being bound are assumed on their nodes (see `assumed.py`), so the next cycle
can run at once and never plans their GPUs twice; kube-scheduler binds asynchronously
for the same reason.

Status writes of one object go out one at a time, latest wins: an object whose status
changes twice while a write is in flight gets one more write (the newest), never two
racing ones landing in the wrong order.

Bookkeeping yields to a backlog's bindings: once more pods wait for their bindings than
may be in flight, a status write, and an Event, waits until the bindings decided before
it are answered (see the binder's `quiet`). They shared the API server with the bindings:
at bench-1000 (backlog) 1.32 requests per pod bound, against the ceiling contender's
1.0, and the bindings came at ~80% of its rate. Waiting, a PodGroup's status changes
meanwhile collapse into one write (latest wins).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import structlog

log = structlog.get_logger("phalanx.operator")

Job = Callable[[], Awaitable[None]]
T = TypeVar("T")


class Slots:
    """At most `limit` holders; waiters are served in order."""

    def __init__(self, limit: int) -> None:
        self.free = limit
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()

    async def acquire(self) -> None:
        if self.free:  # nobody waits while a slot is free
            self.free -= 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.release()  # handed over just as the waiter was cancelled
            else:
                self._waiting.remove(turn)
            raise

    def release(self) -> None:
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                return
        self.free += 1


class BackgroundWrites:
    def __init__(self, concurrency: int,
                 quiet: Callable[[], Awaitable[None]] | None = None) -> None:
        self._slots = Slots(concurrency)
        self._quiet = quiet  # returns when bookkeeping may go (see the module's doc)
        self._tasks: set[asyncio.Task[None]] = set()
        # object key -> the write not started yet (job, bookkeeping): the newest only
        self._pending: dict[str, tuple[Job, bool]] = {}
        self._draining: set[str] = set()  # object keys with a writer task
        self.failures = 0

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, work: Coroutine[Any, Any, None], name: str = "write") -> None:
        """Run `work` in the background; its exception is logged, never lost."""
        task = asyncio.create_task(work, name=f"phalanx {name}")
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def offer(self, key: str, job: Job, bookkeeping: bool = True) -> None:
        """Write `key` with `job`, after any write of `key` in flight; it replaces a queued
        one. It is bookkeeping unless told (one per queue or topology per cycle: too few
        to matter, and read at once)."""
        self._pending[key] = (job, bookkeeping)
        if key not in self._draining:
            self._draining.add(key)
            self.spawn(self._drain(key), name=f"status {key}")

    async def bounded(self, job: Callable[[], Awaitable[T]], bookkeeping: bool = False) -> T:
        """Run `job` holding one of the shared slots (the API server's fair share);
        `bookkeeping`: after `quiet`."""
        if bookkeeping and self._quiet is not None:
            await self._quiet()
        await self._slots.acquire()
        try:
            return await job()
        finally:
            self._slots.release()

    async def settle(self, timeout: float | None = None) -> bool:
        """Wait for every write started so far (and those they start); True if all ended."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self._tasks:
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return False
            await asyncio.wait(list(self._tasks), timeout=remaining)
        return True

    async def cancel(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _drain(self, key: str) -> None:
        try:
            while key in self._pending:
                if self._pending[key][1] and self._quiet is not None:
                    await self._quiet()  # a newer write offered meanwhile replaces it
                job, _ = self._pending.pop(key)
                try:
                    await self.bounded(job)
                except Exception:  # the object's next write must not wait for another offer
                    self.failures += 1
                    log.exception("status write failed", object=key)
        finally:
            self._draining.discard(key)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            self.failures += 1
            log.error("background write failed", task=task.get_name(),
                      exc_info=(type(error), error, error.__traceback__))
