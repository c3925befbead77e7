"""How long the garbage collector stops this process, read by the operator's cycle log.

CPython's cyclic collector runs inside whatever thread allocates, holding the interpreter
lock: while it goes over every tracked object (a full collection: hundreds of
thousands of objects at bench-5000, 0.3 s in `python -m bench.e2e.snapshot`'s process alone)
neither the event loop nor the core's thread moves. Binding replies wait, the watch
falls behind, a cycle's seconds grow, and nothing in the operator's own figures says
why. The collector's `gc.callbacks` hook times each collection.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class GcTotals:
    seconds: float = 0.0
    collections: int = 0
    full: int = 0  # of the oldest generation: every tracked object visited
    longest: float = 0.0


class GcPauses:
    """Totals since the process started; `since` gives what the last call has not seen."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._started: float | None = None
        self.totals = GcTotals()
        self._seen = GcTotals()

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = self._clock()
            return
        if self._started is None:
            return
        pause, self._started = self._clock() - self._started, None
        self.totals.seconds += pause
        self.totals.collections += 1
        self.totals.full += info.get("generation") == 2
        self.totals.longest = max(self.totals.longest, pause)
        self._seen.longest = max(self._seen.longest, pause)

    def since(self) -> GcTotals:
        """Pauses since the last call (its `longest`: the longest of those)."""
        now, seen = self.totals, self._seen
        delta = GcTotals(now.seconds - seen.seconds, now.collections - seen.collections,
                         now.full - seen.full, seen.longest)
        self._seen = GcTotals(now.seconds, now.collections, now.full, 0.0)
        return delta


PAUSES = GcPauses()


def recorded_pauses() -> GcPauses:
    """The process's one recorder, hooked into the collector on first use."""
    if PAUSES not in gc.callbacks:
        gc.callbacks.append(PAUSES)
    return PAUSES
