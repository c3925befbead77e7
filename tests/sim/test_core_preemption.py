"""The gang policies carry out the core's evictions and hand its holds back to it."""

from __future__ import annotations

from phalanx.core.model.eviction import Eviction, EvictionReason
from phalanx.core.model.inputs import PREEMPT_NEVER
from phalanx.core.model.names import GPU, GroupKey, PodKey
from phalanx.core.model.nomination import PREEMPTING, Nomination
from phalanx.core.model.result import CycleResult, GroupDecision
from phalanx.core.model.status import Reason, StatusCode
from phalanx.sim.jobrun import JobRun
from phalanx.sim.model import SimQueue
from phalanx.sim.policies.core_policy import CorePolicy
from phalanx.sim.policy import PodEviction, SchedulingView
from phalanx.sim.state import ClusterState

from .conftest import job, make_cluster

CLUSTER = make_cluster({"r0": ["n0", "n1", "n2"]})


def _policy() -> CorePolicy:
    queues = [SimQueue("team-a", guarantee_gpus=16), SimQueue("team-b", reclaimable=False)]
    return CorePolicy("phalanx", CLUSTER, True, "binpack", queues=queues)


def _running(name: str, nodes: list[int], when: float, queue: str = "default") -> JobRun:
    run = JobRun(job(name, 0, 1000, pods=len(nodes), queue=queue))
    run.nodes.extend(nodes)
    run.devices.extend([tuple(range(8))] * len(nodes))
    run.bound_at.extend([when] * len(nodes))
    run.start = when
    return run


def _view(running: list[JobRun], pending: list[JobRun], now: float = 100.0) -> SchedulingView:
    return SchedulingView(now, CLUSTER, ClusterState(CLUSTER), pending, running)


def _decision(group: str, nomination: Nomination | None) -> GroupDecision:
    return GroupDecision(
        group=GroupKey(group),
        admitted=True,
        scheduled=False,
        placed=0,
        code=StatusCode.UNSCHEDULABLE,
        reason=Reason.NO_DOMAIN_FITS,
        message="",
        placement=None,
        nomination=nomination,
    )


def test_an_eviction_of_the_core_names_the_victim_job_and_its_node() -> None:
    policy = _policy()
    low = _running("low", [1, 2], 10.0)
    _, pod_job = policy.snapshot(_view([low], [JobRun(job("high", 50, 10, pods=2))]))
    evictions = tuple(
        Eviction(
            PodKey(f"sim/low-{i}"),
            GroupKey("sim/low"),
            EvictionReason.PREEMPTED,
            GroupKey("sim/high"),
            "for sim/high",
        )
        for i in (0, 1)
    )
    placements, evicted = policy.carry_out(CycleResult((), (), evictions=evictions), pod_job)
    assert placements == []
    assert evicted == [PodEviction("low", 1), PodEviction("low", 2)]


def test_a_restarted_job_is_bound_afresh() -> None:
    policy = _policy()
    low = _running("low", [1], 10.0)
    policy.snapshot(_view([low], []))
    eviction = Eviction(
        PodKey("sim/low-0"),
        GroupKey("sim/low"),
        EvictionReason.RECLAIMED,
        GroupKey("sim/high"),
        "for sim/high",
    )
    policy.carry_out(CycleResult((), (), evictions=(eviction,)), {})
    again = _running("low", [0], 30.0)
    snapshot, _ = policy.snapshot(_view([again], []))
    (pod,) = [p for p in snapshot.pods if p.group == "low"]
    assert pod.node_name == "n0" and pod.started_at == 30.0


def test_a_hold_reported_by_the_core_is_in_the_groups_next_snapshot_until_dropped() -> None:
    policy = _policy()
    high = JobRun(job("high", 50, 10, pods=2, priority=10))
    view = _view([], [high])
    hold = Nomination(("n1", "n2"), PREEMPTING, since=100.0, expires=400.0)
    policy.carry_out(CycleResult((), (_decision("sim/high", hold),)), {})
    snapshot, _ = policy.snapshot(view)
    assert [g.nomination for g in snapshot.groups if g.name == "high"] == [hold]
    policy.carry_out(CycleResult((), (_decision("sim/high", None),)), {})
    snapshot, _ = policy.snapshot(view)
    assert [g.nomination for g in snapshot.groups if g.name == "high"] == [None]


def test_queues_priorities_and_start_times_reach_the_core() -> None:
    policy = _policy()
    low = _running("low", [0], 12.5, queue="team-a")
    never = JobRun(job("never", 50, 10, priority=7, may_preempt=False, queue="team-b"))
    snapshot, _ = policy.snapshot(_view([low], [never]))
    queues = {q.name: q for q in snapshot.queues}
    assert queues["team-a"].guarantee == {GPU: 16_000} and queues["team-a"].reclaimable
    assert queues["team-b"].guarantee is None and not queues["team-b"].reclaimable
    groups = {g.name: g for g in snapshot.groups}
    assert groups["low"].queue == "team-a" and groups["never"].queue == "team-b"
    pods = {p.name: p for p in snapshot.pods}
    assert pods["low-0"].started_at == 12.5
    (cls,) = snapshot.priority_classes
    assert pods["never-0"].priority_class_name == cls.name
    assert (cls.value, cls.preemption_policy) == (7, PREEMPT_NEVER)
