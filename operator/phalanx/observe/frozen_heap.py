"""Long-lived objects kept out of the garbage collector's way (the operator's cache, the
simulator's snapshot of each cycle).

CPython starts a full collection when the objects that survived into its oldest
generation since the last one number a quarter of that generation. The operator's cache
replaces a pod's body at every watch event, so that quarter fills again within seconds,
and each full collection goes over every tracked object with the interpreter held: at
bench-5000 in arrival mode, 47 full collections in about 200 s, 40 s of pauses in all,
the longest 1.3 s (`gc_seconds` in the cycle lines, `python -m bench.e2e.operator_log`).
Nothing in the cache or a snapshot needs the cyclic collector: bodies and parsed forms
are freed by reference counting when replaced.

So each cycle starts by moving every object alive into the collector's permanent
generation (`gc.freeze`): later collections visit only what was made since, which is
small. Objects frozen while part of a reference cycle (a finished task and its
exception, say) are not freed until thawed, so every `thaw_seconds` the heap is thawed
once and the next full collection frees them.

The youngest generation is also collected less often: CPython collects it after every
700 new container objects by default, and a cycle makes hundreds of thousands that live
to its end (a GroupWork and a GroupDecision per group, the rooms of the searches), so
each was scanned several times on its way to the oldest generation, to free nothing.
With 20,000 (and 20 collections of each younger generation before the next one):
Alibaba trace, seed 1 (`python -m bench.sim.cycles --cluster
bench/data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv --trace
bench/data/alibaba-gpu-v2023/openb_pod_list_default.csv --policy phalanx --load 1.3
--cycle-period 300 --seed 1`, two runs each way alternated, load 0.9-1.5), the collector's
time over the 38 cycles fell from 0.79-0.80 s to 0.14-0.16 s, cycle p95 from 0.52-0.55 s
to 0.48-0.49 s, with the same decisions digest. Garbage that only the cyclic collector
frees waits a little longer; everything else is freed by reference counting as before.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator

THAW_SECONDS = 300.0
THRESHOLDS = (20_000, 20, 20)  # the collector's per-generation thresholds (see above)


class FrozenHeap:
    def __init__(self, clock: Callable[[], float], thaw_seconds: float = THAW_SECONDS) -> None:
        self._clock = clock
        self._thaw_seconds = thaw_seconds
        self._thawed_at = clock()
        gc.set_threshold(*THRESHOLDS)

    def cycle_started(self) -> None:
        """Freeze what is alive now, unless it is time to thaw (see the module)."""
        now = self._clock()
        if now - self._thawed_at >= self._thaw_seconds:
            self.thaw()
            self._thawed_at = now
        else:
            self.keep()

    def thaw(self) -> None:
        """Everything back to the collector (at the operator's end, and periodically)."""
        gc.unfreeze()

    def keep(self) -> None:
        """Freeze what is alive now: a listed page just parsed into the cache stays, and
        the collections that the next pages set off need not go over it again. Unfrozen,
        they went over every page before it: at bench-5000 the 21 pages of 20,870 pods
        took 4.8 s to list and parse, 2.9 s frozen page by page (one 5,000-node backlog
        run each, same machine; `listed` in the operator's log)."""
        gc.freeze()

    @contextlib.contextmanager
    def deciding(self) -> Iterator[None]:
        """No collection while a cycle parses its view and decides; what is alive at the
        end (the snapshot and the decisions, kept until the next cycle) is frozen.

        A cycle makes hundreds of thousands of objects and no garbage the collector alone
        can free (reference counting frees all of it;
        tests/core/test_core_no_reference_cycles.py checks the core's cycle makes no
        reference cycles), so each collection during it went over the cycle's young
        objects for nothing: at bench-5000 the first cycle took 1.17 s, 1.08 s of it
        collections; 0.9-1.4 s, 0.26-0.31 s of it collections, with this. Reference
        cycles the event loop makes meanwhile (a failed request's exception and its
        traceback) wait for the next thaw, as those frozen at a cycle's start do."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            self.keep()
            if enabled:
                gc.enable()
