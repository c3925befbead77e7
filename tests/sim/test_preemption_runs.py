"""Whole runs with priorities: evictions conserve GPUs and cost what the victims ran."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.sim.engine import SimConfig, simulate
from phalanx.sim.jobrun import JobRun
from phalanx.sim.metrics import summarise
from phalanx.sim.model import JobSpec, SimCluster
from phalanx.sim.policies import make_policy
from phalanx.sim.state import ClusterState
from phalanx.sim.trace import jobs_from_spec
from phalanx.sim.workloads.mix import queues_from_spec

from .conftest import job, make_cluster

POLICIES = ["phalanx", "kube-default", "gang-spread", "gang-binpack"]
GANG_POLICIES = ["phalanx", "gang-spread", "gang-binpack"]
MIXED = {
    "generator": "synthetic",
    "jobs": 30,
    "load": 1.2,
    "durationMedianSeconds": 600,
    "priorities": {"highShare": 0.3, "high": 100, "burst": 3},
    "queues": [
        {"name": "a", "share": 3, "guarantee": 64},
        {"name": "b", "share": 1, "guarantee": 64},
    ],
}


def _cluster() -> SimCluster:
    return make_cluster({f"r{r}": [f"n{r}{i}" for i in range(4)] for r in range(4)})


@pytest.mark.parametrize("policy", POLICIES)
def test_gpus_are_conserved_while_jobs_are_evicted(policy: str) -> None:
    cluster = _cluster()

    def observe(now: float, state: ClusterState, runs: dict[str, JobRun]) -> None:
        held = sum(r.held_gpus for r in runs.values() if r.finish is None)
        assert state.allocated_gpus == held
        for run in runs.values():
            assert run.placed == len(run.bound_at)
            if run.spec.arrival <= now and run.finish is None:
                assert (run.start is None) == (run.waiting_since is not None)

    jobs = jobs_from_spec(MIXED, cluster, seed=6)
    policy_ = make_policy(policy, cluster, queues=queues_from_spec(MIXED))
    config = SimConfig(horizon=1e6, check_invariants=True)
    result = simulate(cluster, jobs, policy_, config, observe)
    summary = summarise(result)
    assert summary["evicted_gpus"] > 0 and summary["gpu_hours_lost"] > 0
    assert all(r.finish is not None for r in result.runs)
    for run in result.runs:
        assert run.finish is not None and run.start is not None
        assert run.finish == pytest.approx(run.start + run.spec.duration * run.slowdown)
        assert run.waited == pytest.approx(run.start - run.spec.arrival - _ran_before(run))


def _ran_before(run: JobRun) -> float:
    """Seconds the evicted attempts ran (their lost GPU-seconds over the job's GPUs)."""
    return run.lost_gpu_seconds / run.spec.gpus


def _full_cluster(high: JobSpec) -> tuple[SimCluster, list[JobSpec]]:
    cluster = make_cluster({"r0": ["n0", "n1"]})
    return cluster, [job("low-a", 0, 1000), job("low-b", 10, 1000), high]


@pytest.mark.parametrize("policy", POLICIES)
def test_a_high_priority_job_evicts_one_low_job_and_its_run_is_lost(policy: str) -> None:
    cluster, jobs = _full_cluster(job("high", 100, 50, priority=10))
    result = simulate(cluster, jobs, make_policy(policy, cluster), SimConfig(horizon=1e5))
    runs = {r.name: r for r in result.runs}
    assert runs["high"].start == 100
    (victim,) = [r for r in result.runs if r.attempt]
    assert victim.attempt == 1 and victim.evicted_gpus == 8
    assert victim.first_start is not None
    assert victim.lost_gpu_seconds == 8 * (100 - victim.first_start)
    assert victim.start is not None and victim.start >= 150
    assert summarise(result)["gpu_hours_lost"] == pytest.approx(victim.lost_gpu_seconds / 3600)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_job_that_may_not_preempt_waits_for_room(policy: str) -> None:
    cluster, jobs = _full_cluster(job("high", 100, 50, priority=10, may_preempt=False))
    result = simulate(cluster, jobs, make_policy(policy, cluster), SimConfig(horizon=1e5))
    runs = {r.name: r for r in result.runs}
    assert runs["high"].start == 1000
    assert summarise(result)["evicted_gpus"] == 0


def test_every_preemptor_starts_where_its_victims_were_evicted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Victims leave at once in the simulator, so a gang that evicted starts at that very
    instant, unless a group of its queue and of higher priority (which could evict it
    anyway) took the room. A swap loop, a queue's high-priority jobs taking room another
    queue had reclaimed, or two gangs reclaiming the same last room, breaks this."""
    from phalanx.core.cycle import run_cycle
    from phalanx.sim.policies import core_policy

    evictions: list[tuple[float, str]] = []

    def recording(snapshot: Any, config: Any, now: float) -> Any:
        result = run_cycle(snapshot, config, now)
        evictions.extend((now, e.preemptor.split("/")[1]) for e in result.evictions)
        return result

    monkeypatch.setattr(core_policy, "run_cycle", recording)
    started: set[tuple[float, str]] = set()

    def observe(now: float, state: ClusterState, runs: dict[str, JobRun]) -> None:
        started.update((now, name) for name, run in runs.items() if run.start == now)

    queues = [{"name": q, "share": 1, "guarantee": 64} for q in ("a", "b")]
    trace = {**MIXED, "jobs": 80, "load": 1.4, "queues": queues}
    cluster = _cluster()
    jobs = jobs_from_spec(trace, cluster, seed=2)  # 8 preemptors did not start, before
    specs = {j.name: j for j in jobs}
    policy = make_policy("phalanx", cluster, queues=queues_from_spec(trace))
    simulate(cluster, jobs, policy, SimConfig(horizon=1e6), observe)
    assert evictions
    for when, preemptor in set(evictions):
        spec = specs[preemptor]
        outranked = any(
            (when, other.name) in started
            and other.queue == spec.queue
            and other.priority > spec.priority
            for other in jobs
        )
        assert (when, preemptor) in started or outranked, (when, preemptor)
