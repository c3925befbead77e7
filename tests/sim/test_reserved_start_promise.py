"""Slurm's backfill promise, on random clusters and arrivals: if no gang of higher priority
arrives and no node is lost, a gang never starts later than the first start it was
given once it became the first of its queue to wait (the start of the room reserved for
it). Limits are enforced by the engine; actual runtimes are at or below them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.sim.engine import SimConfig, simulate
from phalanx.sim.model import JobSpec, SimCluster
from phalanx.sim.policies import make_policy
from phalanx.sim.slowdown import SlowdownModel

from .conftest import make_cluster


@st.composite
def clusters_and_jobs(draw: st.DrawFn) -> tuple[SimCluster, list[JobSpec]]:
    racks = draw(st.integers(1, 2))
    per_rack = draw(st.integers(1, 3))
    cluster = make_cluster({f"r{r}": [f"n{r}{i}" for i in range(per_rack)] for r in range(racks)})
    nodes = racks * per_rack
    jobs = []
    for i in range(draw(st.integers(2, 14))):
        duration = float(draw(st.integers(60, 3000)))
        slack = draw(st.sampled_from((1.0, 1.0, 1.5, 3.0, 10.0)))  # limits at or above runtimes
        limit = None if draw(st.integers(0, 9)) == 0 else int(duration * slack) + 1
        jobs.append(JobSpec(
            name=f"j{i:02d}", arrival=float(draw(st.integers(0, 2000))), duration=duration,
            pods=draw(st.integers(1, nodes)), gpus_per_pod=draw(st.sampled_from((1, 2, 4, 8))),
            runtime_limit_seconds=limit))  # fmt: skip
    return cluster, jobs


@settings(max_examples=60, deadline=None)
@given(clusters_and_jobs(), st.sampled_from(("phalanx", "phalanx-nobackfill")))
def test_no_gang_starts_later_than_the_start_first_reserved_for_it(
    case: tuple[SimCluster, list[JobSpec]], policy: str
) -> None:
    cluster, jobs = case
    config = SimConfig(horizon=1e6, slowdown=SlowdownModel.off(), check_invariants=True)
    result = simulate(cluster, jobs, make_policy(policy, cluster), config)
    for run in result.runs:
        assert run.finish is not None, run.name  # every job ran (nothing starves for ever)
        assert not run.cut, run.name  # runtimes are within the limits
        if run.expected_start is not None:
            assert run.first_start is not None
            assert run.first_start <= run.expected_start + 1e-6, (
                run.name, run.expected_at, run.expected_start, run.first_start)


def test_a_full_run_with_limits_and_queues_never_overcommits_a_gpu() -> None:
    """priority-queues, seed 1, with the runtime limits its users declare: the engine
    refuses any placement onto a GPU already held (`CapacityError`). Planning a start
    once put a pod bound that cycle on a device a running pod held, at 12 h."""
    from bench.sim.run import read_workloads, run_task, tasks_of

    (workload,) = read_workloads(False, ["priority-queues"])
    (task,) = [t for t in tasks_of(workload)
               if t.policy == "phalanx" and t.seed == 1 and t.slowdown == "on"]  # fmt: skip
    summary = run_task(task)
    assert summary["started"] > 0 and summary["gpu_hours_lost"] >= 0
