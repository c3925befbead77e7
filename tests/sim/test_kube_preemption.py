"""kube-default's DefaultPreemption model on tiny clusters, and what an eviction costs."""

from __future__ import annotations

import pytest

from phalanx.sim.engine import SimConfig, simulate
from phalanx.sim.jobrun import JobRun
from phalanx.sim.metrics import summarise
from phalanx.sim.model import JobSpec
from phalanx.sim.policies import make_policy
from phalanx.sim.policies.kube_preemption import BoundPod, Room, victims_on_node
from phalanx.sim.policy import PodEviction, SchedulingView
from phalanx.sim.state import ClusterState

from .conftest import job, make_cluster


def _view(
    nodes: list[str], running: list[tuple[JobRun, list[int], float]], pending: list[JobRun]
) -> SchedulingView:
    """A cycle's view with `running` jobs bound (job, nodes, bind time) and `pending` ones."""
    cluster = make_cluster({"r0": nodes})
    state = ClusterState(cluster)
    for run, placed, when in running:
        for node in placed:
            spec = run.spec
            shape = (spec.milli_per_pod, spec.cpu_milli_per_pod, spec.memory_mib_per_pod)
            run.devices.append(state.bind(node, *shape))
            run.nodes.append(node)
            run.bound_at.append(when)
        run.start = when
    return SchedulingView(
        now=100.0,
        cluster=cluster,
        state=state,
        pending=pending,
        running=[r for r, _, _ in running],
    )


def _schedule(view: SchedulingView) -> tuple[list[PodEviction], list[tuple[str, int]]]:
    outcome = make_policy("kube-default", view.cluster).schedule(view)
    return list(outcome.evictions), [(p.job, p.node) for p in outcome.placements]


def test_preempts_on_the_node_whose_highest_victim_has_the_lowest_priority() -> None:
    view = _view(
        ["n0", "n1"],
        [
            (JobRun(job("mid", 0, 1000, priority=5)), [0], 0.0),
            (JobRun(job("low", 0, 1000, priority=1)), [1], 0.0),
        ],
        [JobRun(job("high", 50, 10, priority=10))],
    )
    evictions, placements = _schedule(view)
    assert evictions == [PodEviction("low", 1)]
    assert placements == [("high", 1)]


def test_lowest_highest_priority_wins_over_fewer_victims() -> None:
    view = _view(
        ["n0", "n1"],
        [
            (JobRun(job("three", 0, 1000, priority=3)), [0], 0.0),
            (JobRun(job("two-a", 0, 1000, gpus=4, priority=2)), [1], 0.0),
            (JobRun(job("two-b", 0, 1000, gpus=4, priority=2)), [1], 0.0),
        ],
        [JobRun(job("high", 50, 10, priority=10))],
    )
    evictions, placements = _schedule(view)
    assert sorted(e.job for e in evictions) == ["two-a", "two-b"]
    assert placements == [("high", 1)]


def test_fewest_victims_then_latest_start_break_ties() -> None:
    view = _view(
        ["n0", "n1", "n2"],
        [
            (JobRun(job("half-a", 0, 1000, gpus=4)), [0], 0.0),
            (JobRun(job("half-b", 0, 1000, gpus=4)), [0], 0.0),
            (JobRun(job("old", 0, 1000)), [1], 10.0),
            (JobRun(job("young", 0, 1000)), [2], 20.0),
        ],
        [JobRun(job("high", 50, 10, priority=10))],
    )
    evictions, placements = _schedule(view)
    assert evictions == [PodEviction("young", 2)]
    assert placements == [("high", 2)]


def _full() -> Room:
    """An 8-GPU node whose every device is held, with cpu and memory to spare."""
    return Room([1000] * 8, 60_000, 500_000)


def test_evicts_only_as_many_pods_as_needed_most_recently_started_first() -> None:
    pods = [BoundPod(f"p{i}", 0, 0, float(i), (2000, 1000, 1024), (2 * i, 2 * i + 1))
            for i in range(4)]
    victims = victims_on_node(_full(), pods, priority=10, shape=(4000, 1000, 1024))
    assert victims is not None
    assert sorted(v.job for v in victims) == ["p2", "p3"]


def test_keeps_higher_priority_pods_and_evicts_lower_ones() -> None:
    pods = [
        BoundPod("important", 0, 5, 9.0, (4000, 1000, 1024), (0, 1, 2, 3)),
        BoundPod("cheap", 0, 1, 0.0, (4000, 1000, 1024), (4, 5, 6, 7)),
    ]
    victims = victims_on_node(_full(), pods, priority=10, shape=(4000, 1000, 1024))
    assert victims == (pods[1],)


@pytest.mark.parametrize(
    ("preemptor", "why"),
    [
        (job("big", 50, 10, gpus=16, priority=10), "no node is large enough"),
        (job("equal", 50, 10, priority=0), "no lower priority"),
        (job("never", 50, 10, priority=10, may_preempt=False), "preemptionPolicy Never"),
    ],
)
def test_evicts_nothing_when_it_would_not_help(preemptor: JobSpec, why: str) -> None:
    view = _view(
        ["n0", "n1"],
        [(JobRun(job("a", 0, 1000)), [0], 0.0), (JobRun(job("b", 0, 1000)), [1], 0.0)],
        [JobRun(preemptor)],
    )
    assert _schedule(view) == ([], []), why


def test_pods_of_a_waiting_gang_are_victims_too() -> None:
    holder = JobRun(job("holder", 0, 1000, pods=2))
    view = _view(["n0"], [], [JobRun(job("high", 50, 10, priority=10))])
    spec = holder.spec
    shape = (spec.milli_per_pod, spec.cpu_milli_per_pod, spec.memory_mib_per_pod)
    holder.devices.append(view.state.bind(0, *shape))
    holder.nodes.append(0)
    holder.bound_at.append(5.0)
    view = SchedulingView(view.now, view.cluster, view.state, [holder, *view.pending], [])
    evictions, placements = _schedule(view)
    assert evictions == [PodEviction("holder", 0)]
    assert placements == [("high", 0)]


@pytest.mark.parametrize("arrival", [30.0, 60.0])
def test_an_evicted_job_restarts_and_its_lost_work_is_counted(arrival: float) -> None:
    cluster = make_cluster({"r0": ["n0"]})
    jobs = [job("low", 0, 100), job("high", arrival, 50, priority=10)]
    result = simulate(cluster, jobs, make_policy("kube-default", cluster), SimConfig(horizon=1e4))
    runs = {r.name: r for r in result.runs}
    low, high = runs["low"], runs["high"]
    assert high.start == arrival and high.finish == arrival + 50
    assert low.attempt == 1 and low.start == arrival + 50 and low.finish == arrival + 150
    assert low.first_start == 0 and low.waited == 50
    assert low.lost_gpu_seconds == 8 * arrival
    summary = summarise(result)
    assert summary["evicted_gpus"] == 8 and summary["job_evictions"] == 1
    assert summary["gpu_hours_lost"] == pytest.approx(8 * arrival / 3600)
    assert summary["high_priority_wait_seconds"]["p95"] == 0
    assert summary["never_started"] == 0
    assert summary["queueing_delay_seconds"]["mean"] == pytest.approx(25)


def test_a_waiting_high_priority_job_counts_its_wait_so_far() -> None:
    cluster = make_cluster({"r0": ["n0"]})
    jobs = [job("low", 0, 10_000), job("high", 100, 50, priority=10, may_preempt=False)]
    result = simulate(cluster, jobs, make_policy("kube-default", cluster), SimConfig(horizon=1000))
    summary = summarise(result)
    assert summary["never_started"] == 1
    assert summary["high_priority_wait_seconds"]["p50"] == 900
    assert summary["biggest_gang_max_wait_seconds"] == 900
    assert summary["evicted_gpus"] == 0 and summary["gpu_hours_lost"] == 0


@pytest.mark.parametrize("delay", [20.0, 60.0])
def test_an_evicted_job_asks_again_after_the_restart_delay(delay: float) -> None:
    cluster = make_cluster({"r0": ["n0", "n1"]})
    jobs = [job("old", 0, 10_000), job("low", 10, 1000), job("high", 100, 10, priority=10)]
    config = SimConfig(horizon=1e5, restart_delay=delay)
    result = simulate(cluster, jobs, make_policy("kube-default", cluster), config)
    runs = {r.name: r for r in result.runs}
    assert runs["old"].attempt == 0 and runs["low"].attempt == 1
    assert runs["low"].start == max(110.0, 100.0 + delay)
    assert runs["low"].waited == runs["low"].start - 100.0


def test_victims_cannot_come_back_at_the_instant_they_were_evicted() -> None:
    with pytest.raises(ValueError, match="restart_delay"):
        SimConfig(horizon=1.0, restart_delay=0.0)


def test_room_for_a_fraction_or_a_whole_gpu_is_judged_device_by_device() -> None:
    """Two 0.5-GPU pods share device 0 of a 2-GPU node and a 0.6-GPU pod holds device 1:
    a whole GPU needs both sharers of device 0 gone (or the one on device 1); half a GPU
    needs only the most recently started sharer gone."""
    pods = [
        BoundPod("old-half", 0, 0, 1.0, (500, 1000, 1024), (0,)),
        BoundPod("new-half", 0, 0, 2.0, (500, 1000, 1024), (0,)),
        BoundPod("big-part", 0, 5, 0.0, (600, 1000, 1024), (1,)),
    ]

    def room() -> Room:
        return Room([1000, 600], 60_000, 500_000)

    whole = victims_on_node(room(), pods, priority=3, shape=(1000, 1000, 1024))
    assert whole is not None and sorted(v.job for v in whole) == ["new-half", "old-half"]
    half = victims_on_node(room(), pods, priority=3, shape=(500, 1000, 1024))
    assert half is not None and [v.job for v in half] == ["new-half"]
    assert victims_on_node(room(), pods, priority=3, shape=(2000, 1000, 1024)) is None
