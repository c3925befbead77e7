"""The short preemption-and-reclaim chaos run of `make test` (`python -m bench.chaos
--preemption` runs the long one): a full small cluster, two Queues with guarantees, three
priorities, gangs required inside one rack, the operator SIGKILLed three times (one of
them right after an eviction is seen). Checked: evictions happened; no pod asked to be
evicted twice; no held room taken by a gang of lower or equal priority; no overcommit, no
gang partly bound beyond the bound, none lost half way, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.chaos.preemption import MixScenario, run_mix

from phalanx.cluster import LocalCluster

pytestmark = pytest.mark.e2e


def test_operator_killed_amid_preemption_and_reclaim(cluster: LocalCluster,
                                                      tmp_path: Path) -> None:
    scenario = MixScenario("preemption", seed=5, arrivals=10, submit_seconds=12, kills=3,
                           partial_bound_seconds=45, fill_seconds=4, eviction_kills=0.67,
                           bindings_before_kill=(0, 6), trigger_patience=10,
                           settle_seconds=30)
    outcome = run_mix(cluster, scenario, tmp_path, print)
    print(outcome.to_json())
    assert outcome.violations() == [], outcome.to_json()
    assert outcome.kills == scenario.kills
    assert sum(outcome.evictions.values()) > 0
