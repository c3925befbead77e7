"""bench.core.scale judges each scenario by #36's targets: core time under the bound, and
single pods per second of core time at least 2,000."""

from __future__ import annotations

from bench.core.scale import verdicts


def _run(scenario: str, cycle_ms: float, pending: int = 64) -> dict[str, object]:
    return {"scenario": scenario, "cycle_ms_median": cycle_ms, "pending_pods": pending}


def test_targets_met_and_missed() -> None:
    found = verdicts([
        _run("gang-fits", 39.9),
        _run("none-fit", 400.0),  # at the bound: not under it
        _run("preempt", 150.0),
        _run("many-small", 6_000.0, pending=12_500),  # 2,083 pods/s
    ])
    assert [found[s]["met"] for s in ("gang-fits", "none-fit", "preempt", "many-small")] == [
        True, False, True, True
    ]
    assert found["many-small"]["measured"] == "2,083 pods/s"
    slow = verdicts([_run("many-small", 6_500.0, pending=12_500)])  # 1,923 pods/s
    assert slow["many-small"]["met"] is False


def test_the_estimate_is_reported_without_a_target_at_this_size() -> None:
    """Its target (200 ms) is set at 4,000 nodes, in bench.core's own table."""
    found = verdicts([_run("estimate", 900.0)])
    assert found["estimate"] == {"target": "reported", "measured": "900.0 ms", "met": None}
