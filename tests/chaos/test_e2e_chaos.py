"""The short chaos run of `make test` (`make chaos` runs the long one, `python -m bench.chaos`):
gangs replayed on the real control plane while the operator is SIGKILLed at seeded moments,
first a single replica restarted in place, then the leader of two. Every kill is survived:
no node's GPUs overcommitted at any moment, no gang partly bound beyond the bound, every
pod bound in the end, no traceback, a clean exit on SIGTERM."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.chaos.run import Scenario, run_scenario

from phalanx.cluster import LocalCluster

pytestmark = pytest.mark.e2e

# Generous: a partly bound gang is finished by the next leader from the plan in its status;
# this bound catches a gang left stranded, not a slow machine.
PARTIAL_BOUND_SECONDS = 45.0


def check(cluster: LocalCluster, scenario: Scenario, tmp_path: Path) -> None:
    outcome = run_scenario(cluster, scenario, tmp_path, print)
    assert outcome.violations() == [], outcome.to_json()
    assert outcome.kills == scenario.kills
    assert outcome.pods > 0 and not outcome.unbound


def test_single_replica_killed_and_restarted_mid_replay(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    check(cluster, Scenario("restart", 1, seed=7, gangs=16, submit_seconds=8, runtimes=(2, 6),
                            kills=3, bindings_before_kill=(0, 12),
                            partial_bound_seconds=PARTIAL_BOUND_SECONDS), tmp_path)


def test_leader_of_two_replicas_killed_mid_replay(cluster: LocalCluster, tmp_path: Path) -> None:
    check(cluster, Scenario("failover", 2, seed=11, gangs=12, submit_seconds=6, runtimes=(2, 6),
                            kills=2, bindings_before_kill=(0, 12),
                            partial_bound_seconds=PARTIAL_BOUND_SECONDS), tmp_path)
