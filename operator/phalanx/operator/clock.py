"""Time as the shell's loops see it, injectable so tests move it by hand.

`Clock.now()` reads a monotonic clock; `sleep` and `wait` let time pass. The real one is
`MonotonicClock`; a test passes its own and advances it, so no test waits for time to
pass.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:
        """Wait for `event` at most `timeout` seconds; True if it was set."""
        ...


class MonotonicClock:
    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def wait(self, event: asyncio.Event, timeout: float) -> bool:
        try:
            await asyncio.wait_for(event.wait(), timeout=timeout)
        except TimeoutError:
            return False
        return True
