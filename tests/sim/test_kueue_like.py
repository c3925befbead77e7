"""kueue-like: Kueue's ClusterQueue rules (nominal quota, borrowing, Classic Preemption)
and TAS placement, on tiny clusters."""

from __future__ import annotations

from collections import Counter

from phalanx.sim.engine import SimConfig, simulate
from phalanx.sim.jobrun import JobRun
from phalanx.sim.metrics import summarise
from phalanx.sim.model import JobSpec, SimCluster, SimQueue
from phalanx.sim.policies import make_policy
from phalanx.sim.policy import PodEviction, SchedulingView
from phalanx.sim.state import ClusterState

from .conftest import job, make_cluster

TWO_QUEUES = (SimQueue("a", guarantee_gpus=8), SimQueue("b", guarantee_gpus=8))
HALVES = (SimQueue("a", guarantee_gpus=16), SimQueue("b", guarantee_gpus=16))


def _view(
    cluster: SimCluster, running: list[tuple[JobSpec, list[int], float]], pending: list[JobSpec]
) -> SchedulingView:
    """A cycle's view with `running` jobs bound (spec, node of each pod, admission time)."""
    state = ClusterState(cluster)
    runs = []
    for spec, nodes, when in running:
        run = JobRun(spec)
        for node in nodes:
            shape = (spec.milli_per_pod, spec.cpu_milli_per_pod, spec.memory_mib_per_pod)
            run.devices.append(state.bind(node, *shape))
            run.nodes.append(node)
            run.bound_at.append(when)
        run.start = when
        runs.append(run)
    return SchedulingView(100.0, cluster, state, [JobRun(s) for s in pending], runs)


def _schedule(
    view: SchedulingView, queues: tuple[SimQueue, ...] = TWO_QUEUES
) -> tuple[list[PodEviction], list[tuple[str, int]]]:
    outcome = make_policy("kueue-like", view.cluster, queues=queues).schedule(view)
    return list(outcome.evictions), [(p.job, p.node) for p in outcome.placements]


def test_a_queue_at_its_nominal_quota_is_never_reclaimed_from() -> None:
    cluster = make_cluster({"r0": ["n0", "n1"]})
    view = _view(
        cluster,
        [
            (job("a-low", 0, 1000, queue="a"), [0], 0.0),
            (job("b-low", 0, 1000, queue="b"), [1], 0.0),
        ],
        [job("b-high", 50, 10, gpus=8, pods=2, priority=1000, queue="b")],
    )
    assert _schedule(view) == ([], [])


def test_a_queue_within_its_nominal_quota_reclaims_from_a_borrower_of_any_priority() -> None:
    cluster = make_cluster({"r0": ["n0", "n1"]})
    view = _view(
        cluster,
        [
            (job("a-old", 0, 1000, priority=1000, queue="a"), [0], 0.0),
            (job("a-new", 0, 1000, priority=1000, queue="a"), [1], 10.0),
        ],
        [job("b-low", 50, 10, priority=0, queue="b")],
    )
    evictions, placements = _schedule(view)
    assert evictions == [PodEviction("a-new", 1)]  # the most recently admitted
    assert placements == [("b-low", 1)]


def test_a_borrowing_preemptor_takes_only_lower_priority_work_of_borrowing_queues() -> None:
    cluster = make_cluster({"r0": ["n0", "n1", "n2"]})
    queues = (SimQueue("a", guarantee_gpus=8), SimQueue("b", guarantee_gpus=8))
    running = [
        (job("a-own", 0, 1000, priority=5, queue="a"), [0], 0.0),
        (job("a-borrowed", 0, 1000, priority=5, queue="a"), [1], 1.0),
        (job("b-own", 0, 1000, priority=5, queue="b"), [2], 0.0),
    ]
    equal = _view(cluster, running, [job("b-more", 50, 10, priority=5, queue="b")])
    assert _schedule(equal, queues) == ([], [])
    higher = _view(cluster, running, [job("b-more", 50, 10, priority=6, queue="b")])
    assert _schedule(higher, queues) == ([PodEviction("a-borrowed", 1)], [("b-more", 1)])


def test_within_its_queue_a_job_preempts_only_lower_priority_and_as_few_as_it_needs() -> None:
    cluster = make_cluster({"r0": ["n0", "n1", "n2"]})
    view = _view(
        cluster,
        [
            (job("mid", 0, 1000, priority=5), [0], 0.0),
            (job("low-old", 0, 1000, priority=1), [1], 0.0),
            (job("low-new", 0, 1000, priority=1), [2], 5.0),
        ],
        [job("high", 50, 10, priority=10, pods=2)],
    )
    evictions, placements = _schedule(view, ())
    assert evictions == [PodEviction("low-new", 2), PodEviction("low-old", 1)]
    assert sorted(placements) == [("high", 1), ("high", 2)]


def test_a_job_is_admitted_whole_or_not_at_all() -> None:
    cluster = make_cluster({"r0": ["n0", "n1", "n2"]})
    view = _view(cluster, [(job("busy", 0, 1000), [0], 0.0)], [job("gang", 50, 10, pods=3)])
    assert _schedule(view, ()) == ([], [])
    kube = make_policy("kube-default", cluster).schedule(view)
    assert len(kube.placements) == 2  # pod by pod, the same gang holds what fits


def test_a_gang_goes_to_the_tightest_domain_that_holds_it_whole() -> None:
    cluster = make_cluster({"r0": ["n0", "n1", "n2"], "r1": ["n3", "n4"], "r2": ["n5", "n6"]})
    view = _view(cluster, [(job("busy", 0, 1000), [5], 0.0)], [job("gang", 50, 10, pods=2)])
    assert _schedule(view, ()) == ([], [("gang", 3), ("gang", 4)])


def test_inside_the_domain_the_last_pods_go_to_the_tightest_node() -> None:
    cluster = make_cluster({"r0": ["n0", "n1", "n2"]})
    view = _view(
        cluster, [(job("half", 0, 1000, gpus=4), [1], 0.0)], [job("gang", 50, 10, pods=3, gpus=4)]
    )
    _, placements = _schedule(view, ())
    assert Counter(node for _, node in placements) == {0: 2, 1: 1}


def _trace() -> list[JobSpec]:
    return [
        job(
            f"j{i}",
            arrival=60.0 * i,
            duration=900.0 + 37 * i,
            pods=1 + i % 3,
            priority=1000 if i % 4 == 0 else 0,
            queue="a" if i % 3 else "b",
        )
        for i in range(24)
    ]


def test_runs_are_deterministic_and_report_each_queue() -> None:
    cluster = make_cluster({"r0": ["n0", "n1"], "r1": ["n2", "n3"]})
    config = SimConfig(horizon=20_000.0)
    summaries = []
    for _ in range(2):
        policy = make_policy("kueue-like", cluster, wall=lambda: 0.0, queues=HALVES)
        summaries.append(summarise(simulate(cluster, _trace(), policy, config)))
    assert summaries[0] == summaries[1]
    per_queue = summaries[0]["per_queue"]
    assert sorted(per_queue) == ["a", "b"]
    lost = sum(q["gpu_hours_lost"] for q in per_queue.values())
    assert abs(lost - summaries[0]["gpu_hours_lost"]) < 1e-9
    assert summaries[0]["job_evictions"] > 0


def test_a_job_whose_priority_class_says_never_preempts_nothing() -> None:
    cluster = make_cluster({"r0": ["n0"]})
    running = [(job("low", 0, 1000), [0], 0.0)]
    never = _view(cluster, running, [job("high", 50, 10, priority=10, may_preempt=False)])
    assert _schedule(never, ()) == ([], [])
    may = _view(cluster, running, [job("high", 50, 10, priority=10)])
    assert _schedule(may, ()) == ([PodEviction("low", 0)], [("high", 0)])
