"""bench.sim.cycles: a digest that tells two runs' decisions apart, and the cycles' figures."""

from __future__ import annotations

import gc
import itertools

from bench.sim.cycles import CycleRecord, Recorder, report

from phalanx.core import CycleResult, Snapshot, run_cycle
from phalanx.observe.gc_pauses import GcPauses


def test_the_digest_follows_the_results_and_not_the_timings() -> None:
    fast = [CycleRecord(0.1, 0, 0, "a"), CycleRecord(0.2, 3, 1, "b")]
    slow = [CycleRecord(0.9, 0, 0, "a", 0.25), CycleRecord(1.5, 3, 1, "b", 0.5)]
    other = [CycleRecord(0.1, 0, 0, "a"), CycleRecord(0.2, 3, 1, "c")]
    assert report(fast)[-1] == report(slow)[-1] != report(other)[-1]
    assert report(slow)[-2] == ("cpu per cycle p50 0.900 s, p95 1.500 s, max 1.500 s; "
                                "gc 0.750 s in all; searches 3; cycles with a reservation held 1")


def test_a_cycle_counts_the_collections_inside_it_and_no_other() -> None:
    ticks = itertools.count()
    recorder = Recorder(pauses=GcPauses(lambda: float(next(ticks))))  # each pause: 1 s

    def cycle(snapshot: Snapshot) -> CycleResult:
        gc.collect()
        return run_cycle(snapshot)

    enabled = gc.isenabled()
    gc.disable()  # no collection but these two (gc.collect calls the hook regardless)
    gc.callbacks.append(recorder.pauses)
    try:
        gc.collect()  # between cycles: no cycle's
        recorder.run_cycle(cycle)(Snapshot())
    finally:
        gc.callbacks.remove(recorder.pauses)
        if enabled:
            gc.enable()
    assert [c.gc_seconds for c in recorder.cycles] == [1.0]
