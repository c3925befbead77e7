"""bench.sim_cycles: a digest that tells two runs' decisions apart, and the cycles' figures."""

from __future__ import annotations

from bench.sim_cycles import CycleRecord, report


def test_the_digest_follows_the_results_and_not_the_timings() -> None:
    fast = [CycleRecord(0.1, 0, 0, "a"), CycleRecord(0.2, 3, 1, "b")]
    slow = [CycleRecord(0.9, 0, 0, "a"), CycleRecord(1.5, 3, 1, "b")]
    other = [CycleRecord(0.1, 0, 0, "a"), CycleRecord(0.2, 3, 1, "c")]
    assert report(fast)[-1] == report(slow)[-1] != report(other)[-1]
    assert report(slow)[-2] == ("cpu per cycle p50 0.900 s, p95 1.500 s, max 1.500 s; "
                                "searches 3; cycles with a reservation held 1")
