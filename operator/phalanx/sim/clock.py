"""Clocks injected into the simulator: virtual time for the model, wall time for costs."""

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
"""Monotonic wall clock in seconds (injectable so tests never depend on speed)."""

default_wall_timer: WallTimer = time.perf_counter
