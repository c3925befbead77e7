"""An in-process operator on its own event loop in a thread, for end-to-end tests.

Its own loop because Kopf, when it stops, cancels every task created on its loop after it
started, which would include the test's own tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import threading
import time
from collections.abc import Awaitable, Callable, Iterator

from phalanx.operator.main import Operator


@contextlib.contextmanager
def operator_in_thread(
    make: Callable[[], Awaitable[Operator]], name: str, patience: float = 60.0
) -> Iterator[Operator]:
    """Yield the operator `make()` builds once its first cycle is done; stop it after."""
    holder: list[Operator] = []
    failure: list[BaseException] = []
    loops: list[asyncio.AbstractEventLoop] = []
    stop = threading.Event()

    async def serve() -> None:
        loops.append(asyncio.get_running_loop())
        operator = await make()
        holder.append(operator)
        await operator.run(stop=stop)  # type: ignore[arg-type]  # Kopf takes threading.Event

    def main() -> None:
        try:
            asyncio.run(serve())
        except BaseException as error:  # reported by the caller's assertions below
            failure.append(error)

    thread = threading.Thread(target=main, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + patience
    while not holder or holder[0].loop.cycles == 0:
        assert not failure, failure
        assert time.monotonic() < deadline, f"{name} did not start"
        time.sleep(0.1)
    yield holder[0]
    stop.set()
    thread.join(60)
    assert not thread.is_alive(), f"{name} did not stop; its tasks:\n{_tasks(loops)}"
    assert not failure, failure


def _tasks(loops: list[asyncio.AbstractEventLoop]) -> str:
    """Where each task of the operator's loop waits: what a stop that hangs waits for
    (read from another thread while the loop runs, so a best effort)."""
    out = io.StringIO()
    for task in list(asyncio.all_tasks(loops[0])) if loops else []:
        with contextlib.suppress(Exception):
            task.print_stack(limit=8, file=out)
    return out.getvalue()
