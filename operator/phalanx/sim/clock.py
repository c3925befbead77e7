"""Clocks injected into the simulator: virtual time for the model, CPU time for costs."""

from __future__ import annotations

import time
from collections.abc import Callable


class VirtualClock:
    """Simulated time in seconds; only the engine advances it, and never backwards."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    @property
    def now(self) -> float:
        return self._now

    def advance_to(self, when: float) -> None:
        if when < self._now:
            raise ValueError(f"time cannot go back from {self._now} to {when}")
        self._now = when


WallTimer = Callable[[], float]
"""Clock for a scheduler's cost, in seconds (injectable so tests never depend on speed)."""

# CPU seconds of this process, not wall time: on a shared machine other jobs' load would
# otherwise be counted as the scheduler's cost (bench.core measures cycles the same way).
default_wall_timer: WallTimer = time.process_time
