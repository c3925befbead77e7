"""Long-lived objects kept out of the garbage collector's way (the operator's cache, the
simulator's snapshot of each cycle).

CPython starts a full collection when the objects that survived into its oldest
generation since the last one number a quarter of that generation. The operator's cache
replaces a pod's body at every watch event, so that quarter fills again within seconds,
and each full collection goes over every tracked object with the interpreter held: at
bench-5000 in arrival mode, 47 full collections in about 200 s, 40 s of pauses in all,
the longest 1.3 s (`gc_seconds` in the cycle lines, `python -m bench.operator_log`).
Nothing in the cache or a snapshot needs the cyclic collector: bodies and parsed forms
are freed by reference counting when replaced.

So each cycle starts by moving every object alive into the collector's permanent
generation (`gc.freeze`): later collections visit only what was made since, which is
small. Objects frozen while part of a reference cycle (a finished task and its
exception, say) are not freed until thawed, so every `thaw_seconds` the heap is thawed
once and the next full collection frees them.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

THAW_SECONDS = 300.0


class FrozenHeap:
    def __init__(self, clock: Callable[[], float], thaw_seconds: float = THAW_SECONDS) -> None:
        self._clock = clock
        self._thaw_seconds = thaw_seconds
        self._thawed_at = clock()

    def cycle_started(self) -> None:
        """Freeze what is alive now, unless it is time to thaw (see the module)."""
        now = self._clock()
        if now - self._thawed_at >= self._thaw_seconds:
            self.thaw()
            self._thawed_at = now
        else:
            gc.freeze()

    def thaw(self) -> None:
        """Everything back to the collector (at the operator's end, and periodically)."""
        gc.unfreeze()
