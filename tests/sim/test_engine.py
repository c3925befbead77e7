"""Bookkeeping of the simulator, under every policy."""

from __future__ import annotations

import pytest

from phalanx.sim.engine import SimConfig, simulate
from phalanx.sim.jobrun import JobRun
from phalanx.sim.model import JobSpec, SimCluster
from phalanx.sim.policies import make_policy
from phalanx.sim.state import ClusterState
from phalanx.sim.workloads.synthetic import SyntheticWorkload, generate

from .conftest import job, make_cluster

POLICIES = ["phalanx", "kube-default", "gang-spread", "gang-binpack"]
GANG_POLICIES = ["phalanx", "gang-spread", "gang-binpack"]


def _cluster() -> SimCluster:
    return make_cluster(
        {f"r{r}": [f"n{r}{i}" for i in range(4)] for r in range(4)},
        block_of={"r0": "b0", "r1": "b0", "r2": "b1", "r3": "b1"},
    )


def _jobs(cluster: SimCluster, seed: int) -> list[JobSpec]:
    workload = SyntheticWorkload(jobs=60, load=1.1, duration_median=600.0)
    return generate(workload, cluster, seed)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", [1, 2])
def test_gpus_are_conserved_at_every_event(policy: str, seed: int) -> None:
    cluster = _cluster()
    seen: list[float] = []

    def observe(now: float, state: ClusterState, runs: dict[str, JobRun]) -> None:
        held = sum(r.held_milli for r in runs.values() if r.finish is None)
        assert state.allocated_milli + state.free_milli == cluster.total_gpus * 1000
        assert state.allocated_milli == held
        assert (state.gpu_free >= 0).all() and (state.gpu_free <= state.gpu_cap).all()
        seen.append(now)

    jobs = _jobs(cluster, seed)
    simulate(
        cluster,
        jobs,
        make_policy(policy, cluster),
        SimConfig(horizon=1e6, check_invariants=True),
        observer=observe,
    )
    assert len(seen) >= len(jobs)
    assert seen == sorted(seen)


@pytest.mark.parametrize("policy", POLICIES)
def test_no_job_finishes_before_it_starts_or_starts_before_it_arrives(policy: str) -> None:
    cluster = _cluster()
    result = simulate(
        cluster, _jobs(cluster, 3), make_policy(policy, cluster), SimConfig(horizon=1e6)
    )
    finished = [r for r in result.runs if r.finish is not None]
    assert finished
    for run in result.runs:
        if run.start is not None:
            assert run.start >= run.spec.arrival
        if run.finish is not None:
            assert run.start is not None
            assert run.finish == pytest.approx(run.start + run.spec.duration * run.slowdown)


@pytest.mark.parametrize("policy", POLICIES)
def test_same_inputs_give_the_same_run(policy: str) -> None:
    cluster = _cluster()
    jobs = _jobs(cluster, 4)

    def trace() -> list[tuple[str, float | None, tuple[int, ...]]]:
        result = simulate(cluster, jobs, make_policy(policy, cluster), SimConfig(horizon=1e6))
        return [(r.name, r.start, tuple(r.nodes)) for r in result.runs]

    assert trace() == trace()


@pytest.mark.parametrize("policy", GANG_POLICIES)
def test_gang_pods_all_start_together(policy: str) -> None:
    cluster = _cluster()
    result = simulate(
        cluster, _jobs(cluster, 5), make_policy(policy, cluster), SimConfig(horizon=1e6)
    )
    gangs = [r for r in result.runs if r.spec.pods > 1 and r.first_bound is not None]
    assert gangs
    for run in gangs:
        assert run.first_bound == run.start
        assert run.complete


def _deadlock_case() -> tuple[SimCluster, list[JobSpec]]:
    """A holds one node when the blocker leaves; higher-priority B grabs the other one
    (B's PriorityClass says `preemptionPolicy: Never`, so kube-default evicts nothing)."""
    cluster = make_cluster({"r0": ["n0", "n1"]})
    jobs = [
        job("blocker", arrival=0, duration=100),
        job("a", arrival=10, duration=50, pods=2),
        job("b", arrival=20, duration=50, pods=2, priority=10, may_preempt=False),
    ]
    return cluster, jobs


def test_kube_default_deadlocks_on_partial_gangs() -> None:
    cluster, jobs = _deadlock_case()
    result = simulate(
        cluster, jobs, make_policy("kube-default", cluster), SimConfig(horizon=10_000)
    )
    runs = {r.name: r for r in result.runs}
    assert runs["blocker"].finish == 100
    assert runs["a"].start is None and runs["b"].start is None
    assert runs["a"].placed == 1 and runs["b"].placed == 1
    assert result.integrals.held_idle > 0


@pytest.mark.parametrize("policy", GANG_POLICIES)
def test_gang_policies_do_not_deadlock_on_the_same_case(policy: str) -> None:
    cluster, jobs = _deadlock_case()
    result = simulate(cluster, jobs, make_policy(policy, cluster), SimConfig(horizon=10_000))
    assert all(r.finish is not None for r in result.runs)
    assert result.integrals.held_idle == 0
