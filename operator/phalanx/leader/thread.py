"""The election loop on a thread and event loop of its own.

The scheduling loop shares the operator's event loop with everything else: a long cycle or
a large LIST holds it for seconds on a busy machine. A renewal that waits behind that would
miss the renew deadline and depose a healthy leader (the chaos suite saw it with the 3 s
default). On its own thread the election keeps its rhythm whatever the scheduling loop
does (client-go runs it in a goroutine of its own for the same reason); the other thread
only learns of changes, through events of its own loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Protocol

from phalanx.config.settings import LeaderElection
from phalanx.leader.elector import Callback, LeaderElector, LeaseApi


class ClosableLeaseApi(LeaseApi, Protocol):
    async def close(self) -> None: ...


class Campaign(Protocol):
    """What a replica needs of an election (`LeaderElector` on the replica's own loop, or
    `ThreadedElector`)."""

    @property
    def leading(self) -> asyncio.Event: ...

    @property
    def deposed(self) -> asyncio.Event: ...

    async def run(self, stop: asyncio.Event) -> None: ...


class ThreadedElector:
    """A `LeaderElector` run on its own thread; `leading` and `deposed` are events of the
    loop that called `run`. `make_api` is called on the election's thread (a client belongs
    to the loop it was made on)."""

    def __init__(
        self,
        make_api: Callable[[], ClosableLeaseApi],
        settings: LeaderElection,
        identity: str,
        observe_attempt: Callable[[float], None] = lambda _seconds: None,
    ) -> None:
        if not identity:
            raise ValueError("leader election needs a non-empty identity (the pod name)")
        self._make_api = make_api
        self._settings = settings
        self._identity = identity
        self._observe_attempt = observe_attempt
        self.leading = asyncio.Event()
        self.deposed = asyncio.Event()
        self._failure: BaseException | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """Campaign until `stop` is set, then release the lease if held; cancelled (a crash,
        as the others see it), stop at once and leave the lease to expire."""
        caller = asyncio.get_running_loop()
        ready = threading.Event()
        inner: list[tuple[asyncio.AbstractEventLoop, asyncio.Event, asyncio.Task[None]]] = []

        def mirror(event: asyncio.Event, on: bool) -> Callable[[], None]:
            def post() -> None:
                caller.call_soon_threadsafe(event.set if on else event.clear)

            return post

        async def campaign() -> None:
            api = self._make_api()
            elector = LeaderElector(
                api, self._settings, self._identity,
                on_started_leading=_call(mirror(self.leading, True)),
                on_stopped_leading=_call(lambda: (mirror(self.leading, False)(),
                                                  mirror(self.deposed, True)())),
                observe_attempt=self._observe_attempt)
            halt = asyncio.Event()
            task = asyncio.current_task()
            assert task is not None
            inner.append((asyncio.get_running_loop(), halt, task))
            ready.set()
            try:
                await elector.run(halt)
            finally:
                await api.close()

        def main() -> None:
            try:
                asyncio.run(campaign())
            except asyncio.CancelledError:
                pass
            except BaseException as error:  # handed to the caller below
                self._failure = error
            finally:
                ready.set()

        thread = threading.Thread(target=main, name="phalanx leader election", daemon=True)
        # Both waits made now, before the replica's work starts Kopf (see replica.py).
        stopped = asyncio.create_task(stop.wait())
        ended = asyncio.create_task(asyncio.to_thread(thread.join))
        thread.start()
        try:
            await asyncio.to_thread(ready.wait)
            await asyncio.wait((stopped, ended), return_when=asyncio.FIRST_COMPLETED)
            if inner and not ended.done():
                loop, halt, _ = inner[0]
                loop.call_soon_threadsafe(halt.set)  # graceful: release the lease
        except asyncio.CancelledError:
            # Cancelled before the campaign registered (it does so at once): wait for it,
            # or the thread would campaign forever and the join below never end.
            ready.wait(timeout=5.0)
            if inner:
                loop, _, task = inner[0]
                loop.call_soon_threadsafe(task.cancel)
            raise
        finally:
            stopped.cancel()
            await asyncio.shield(ended)
        if self._failure is not None:
            raise self._failure


def _call(action: Callable[[], object]) -> Callback:
    async def run() -> None:
        action()

    return run
