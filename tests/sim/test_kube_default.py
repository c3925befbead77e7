from phalanx.sim.engine import SimConfig, simulate
from phalanx.sim.jobrun import JobRun
from phalanx.sim.policies import make_policy
from phalanx.sim.policies.kube_default import best_node, queue_order
from phalanx.sim.state import ClusterState

from .conftest import job, make_cluster


def test_least_allocated_spreads_and_breaks_ties_by_node_name() -> None:
    cluster = make_cluster({"r0": ["n0", "n1", "n2"]})
    state = ClusterState(cluster)
    assert best_node(state, 1000, 1000, 8192) == 0
    state.bind(0, 1000, 1000, 8192)
    assert best_node(state, 1000, 1000, 8192) == 1
    state.bind(1, 1000, 1000, 8192)
    state.bind(2, 7000, 60000, 8192)
    assert best_node(state, 1000, 1000, 8192) == 0
    assert best_node(state, 8000, 1000, 8192) is None


def test_gpus_alone_do_not_steer_the_default_score() -> None:
    """Default scoring resources are cpu and memory only: GPU usage is invisible."""
    cluster = make_cluster({"r0": ["n0", "n1"]})
    state = ClusterState(cluster)
    state.bind(0, 7000, 0, 0)
    assert best_node(state, 1000, 1000, 8192) == 0


def test_queue_is_priority_then_arrival() -> None:
    runs = [
        JobRun(job("late-high", 5, 1, priority=9)),
        JobRun(job("early", 1, 1)),
        JobRun(job("late", 5, 1)),
    ]
    assert [r.name for r in queue_order(runs)] == ["late-high", "early", "late"]


def test_placed_pods_hold_gpus_while_the_job_waits() -> None:
    cluster = make_cluster({"r0": ["n0", "n1"]})
    jobs = [job("small", 0, 100), job("gang", 1, 10, pods=2)]
    result = simulate(cluster, jobs, make_policy("kube-default", cluster), SimConfig(horizon=1000))
    gang = next(r for r in result.runs if r.name == "gang")
    assert gang.first_bound == 1 and gang.start == 100
    assert result.integrals.held_idle == 8 * 99
