"""Properties of the victims the core chooses, on random full clusters of running gangs.

For every eviction set: no gang is left partly evicted below its minMember, only
lower-priority pods of the preemptor's queue are touched, and the preemptor is placed
once they are gone. On small cases every possible victim set is tried (brute force):
none is strictly cheaper under the order of preference (elastic pods before whole
gangs, then the lowest highest priority, then the least work lost at that priority, then
the least work lost, then fewest GPUs, then fewest pods). The work a unit loses is
worked out here on its own terms: GPUs times the seconds since its group's last
checkpoint (reported, or the last multiple of its interval since the unit started),
else since it started. A gang that ran less than its queue's minimum runtime is never
a victim.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import combinations

from core_builders import GPU, HOST, node, pod
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.core import (
    CycleResult,
    GroupInfo,
    GroupTopology,
    NodeInfo,
    PodInfo,
    PriorityClassInfo,
    QueueInfo,
    SchedulerConfig,
    Snapshot,
    TopologyLevel,
    TopologySpec,
    run_cycle,
)
from phalanx.core.admission.members import build_works
from phalanx.core.preemption.rules import Claim
from phalanx.core.preemption.units import Unit, build_units, priority_bounds

SPEC = TopologySpec("default", (TopologyLevel("rack", ("rack",)), TopologyLevel("host", (HOST,))))
CLASSES = tuple(PriorityClassInfo(f"p{v}", v) for v in (0, 1, 2, 5))
PREEMPTOR = "default/high"
NOW = 10.0


@dataclass(frozen=True)
class Case:
    nodes: tuple[NodeInfo, ...]
    running: tuple[PodInfo, ...]
    groups: tuple[GroupInfo, ...]
    waiting: tuple[PodInfo, ...]
    high: GroupInfo
    queues: tuple[QueueInfo, ...] = ()

    def snapshot(self, gone: frozenset[str] = frozenset()) -> Snapshot:
        return Snapshot(
            nodes=self.nodes,
            pods=tuple(p for p in self.running if p.key not in gone) + self.waiting,
            groups=(*self.groups, self.high),
            queues=self.queues,
            topologies=(SPEC,),
            priority_classes=CLASSES,
        )

    def priority(self, group: str) -> int:
        info = next(g for g in (*self.groups, self.high) if g.key == group)
        return next(c.value for c in CLASSES if c.name == info.priority_class_name)

    def used(self, queue: str, gone: frozenset[str] = frozenset()) -> int:
        names = {g.name for g in self.groups if g.queue == queue}
        return sum(p.requests[GPU] for p in self.running if p.group in names and p.key not in gone)

    def guarantee(self, queue: str) -> int:
        info = next(q for q in self.queues if q.name == queue)
        return (info.guarantee or {}).get(GPU, 0)


@st.composite
def cases(draw: st.DrawFn, max_gangs: int = 5, queues: bool = False) -> Case:
    racks = draw(st.integers(1, 2))
    hosts = draw(st.integers(1, 3))
    nodes = tuple(
        node(f"n{r}{h}", gpus=8, labels={"rack": f"r{r}"})
        for r in range(racks)
        for h in range(hosts)
    )
    free = {n.name: 8 for n in nodes}
    running: list[PodInfo] = []
    groups: list[GroupInfo] = []
    for g in range(draw(st.integers(1, max_gangs))):
        size = draw(st.integers(1, 3))
        gpus = draw(st.sampled_from((2, 4, 8)))
        spots = [name for name, left in free.items() if left >= gpus]
        if len(spots) == 0:
            break
        chosen = [draw(st.sampled_from(spots)) for _ in range(size)]
        pods = []
        for i, host in enumerate(chosen):
            if free[host] < gpus:
                continue
            free[host] -= gpus
            pods.append(pod(f"g{g}-{i}", gpus=gpus, group=f"g{g}", node_name=host,
                            started_at=float(draw(st.integers(0, 9)))))  # fmt: skip
        if not pods:
            continue
        minimum = draw(st.integers(1, len(pods)))
        level = draw(st.sampled_from((0, 1, 2)))
        queue = draw(st.sampled_from(("team-a", "team-b"))) if queues else "default"
        interval = draw(st.sampled_from((None, 2, 4)))
        reported = draw(st.sampled_from((None, 1.0, 4.0, 8.0)))
        groups.append(
            GroupInfo("default", f"g{g}", minimum, priority_class_name=f"p{level}", queue=queue,
                      checkpoint_interval_seconds=interval, checkpointed_at=reported)
        )  # fmt: skip
        running.extend(pods)
    size = draw(st.integers(1, 2))
    gpus = draw(st.sampled_from((4, 8)))
    topology = GroupTopology(required="rack") if draw(st.booleans()) else None
    queue = "team-a" if queues else "default"
    level = draw(st.sampled_from(("p0", "p5"))) if queues else "p5"
    high = GroupInfo("default", "high", size, priority_class_name=level, topology=topology,
                     queue=queue)  # fmt: skip
    waiting = tuple(pod(f"high-{i}", gpus=gpus, group="high") for i in range(size))
    guarantees: tuple[QueueInfo, ...] = ()
    if queues:
        cap = draw(st.sampled_from((None, 8, 16, 24)))  # team-a's capability, if any
        guarantees = tuple(
            QueueInfo(
                name,
                guarantee={GPU: draw(st.sampled_from((0, 8, 16, 24))) * 1000},
                capability={GPU: cap * 1000} if cap is not None and name == "team-a" else None,
                preempt_min_runtime_seconds=draw(st.sampled_from((None, 3, 6))),
                reclaim_min_runtime_seconds=draw(st.sampled_from((None, 3, 6))),
            )
            for name in ("team-a", "team-b")
        )
    return Case(nodes, tuple(running), tuple(groups), waiting, high, guarantees)


def fits_without(case: Case, gone: frozenset[str]) -> bool:
    result = run_cycle(case.snapshot(gone), SchedulerConfig(preemption=False))
    decision = result.decision(PREEMPTOR)
    return decision is not None and decision.scheduled


Cost = tuple[int, int, float, float, int, int]


def lost_work(info: GroupInfo, pods: list[PodInfo]) -> float:
    """GPU-seconds an eviction of these pods (one unit) loses at NOW."""
    started = max(p.started_at or 0.0 for p in pods)
    saved = started
    if info.checkpoint_interval_seconds:
        interval = info.checkpoint_interval_seconds
        saved = started + (NOW - started) // interval * interval
    if info.checkpointed_at is not None and info.checkpointed_at > saved:
        saved = info.checkpointed_at
    return sum(p.requests[GPU] for p in pods) / 1000 * (NOW - saved)


def cost(case: Case, gone: frozenset[str], elastic: bool) -> Cost:
    """Elastic: each pod is its own unit; else each group loses all its pods together."""
    pods = [p for p in case.running if p.key in gone]
    units: list[tuple[int, float]] = []  # (priority, work lost)
    for info in case.groups:
        mine = [p for p in pods if p.group == info.name]
        if mine:
            parts = [[p] for p in mine] if elastic else [mine]
            units += [(case.priority(info.key), lost_work(info, part)) for part in parts]
    top = max(level for level, _ in units)
    at_top = sum(lost for level, lost in units if level == top)
    total = sum(lost for _, lost in units)
    gpus = sum(p.requests[GPU] for p in pods)
    return (0 if elastic else 1, top, at_top, total, gpus, len(pods))


def is_elastic(case: Case, gone: frozenset[str]) -> bool:
    """Every evicted group keeps at least its minMember running."""
    for info in case.groups:
        members = [p for p in case.running if p.group == info.name]
        lost = sum(1 for p in members if p.key in gone)
        if lost and len(members) - lost < info.min_member:
            return False
    return True


def candidate_sets(case: Case) -> list[tuple[frozenset[str], bool]]:
    """Every victim set the rules allow: whole lower-priority gangs, or elastic pods."""
    lower = [g for g in case.groups if case.priority(g.key) < 5]
    members = {g.name: [p.key for p in case.running if p.group == g.name] for g in lower}
    found: list[tuple[frozenset[str], bool]] = []
    for count in range(1, len(lower) + 1):
        for chosen in combinations(lower, count):
            found.append((frozenset(k for g in chosen for k in members[g.name]), False))
    spare = [k for g in lower if len(members[g.name]) > g.min_member for k in members[g.name]]
    for count in range(1, len(spare) + 1):
        for picked in combinations(spare, count):
            gone = frozenset(picked)
            if is_elastic(case, gone):
                found.append((gone, True))
    return found


def check_rules(case: Case, result: CycleResult) -> frozenset[str]:
    gone = frozenset(e.pod for e in result.evictions)
    if not gone:
        return gone
    assert {e.preemptor for e in result.evictions} == {PREEMPTOR}
    by_group = Counter(e.group for e in result.evictions)
    for info in case.groups:
        members = [p for p in case.running if p.group == info.name]
        lost = by_group.get(info.key, 0)
        assert lost in (0, len(members)) or len(members) - lost >= info.min_member, info
        if lost and info.queue == case.high.queue:
            assert case.priority(info.key) < case.priority(case.high.key)
    for eviction in result.evictions:  # none ran less than its queue's minimum
        info = next(g for g in case.groups if g.key == eviction.group)
        queue = next((q for q in case.queues if q.name == info.queue), None)
        minimum = None if queue is None else (
            queue.reclaim_min_runtime_seconds if eviction.reason == "Reclaimed"
            else queue.preempt_min_runtime_seconds)  # fmt: skip
        pod = next(p for p in case.running if p.key == eviction.pod)
        assert minimum is None or NOW - (pod.started_at or 0.0) >= minimum, (eviction, minimum)
    reclaimed = [e for e in result.evictions if e.reason == "Reclaimed"]
    if reclaimed:
        need = sum(p.requests[GPU] for p in case.waiting)
        assert case.used("team-a") + need <= case.guarantee("team-a")
        assert case.used("team-b", gone) >= case.guarantee("team-b")
        assert all(e.group in {g.key for g in case.groups if g.queue == "team-b"}
                   for e in reclaimed)  # fmt: skip
    assert fits_without(case, gone), "evicted, yet the preemptor does not fit (or is not admitted)"
    assert not any(b.group == PREEMPTOR for b in result.bindings)
    return gone


@settings(max_examples=150)
@given(cases())
def test_victims_are_whole_lower_sufficient_and_no_cheaper_set_exists(case: Case) -> None:
    result = run_cycle(case.snapshot(), now=NOW)
    if result.decision(PREEMPTOR).scheduled:  # type: ignore[union-attr]
        assert result.evictions == ()
        return
    gone = check_rules(case, result)
    feasible = [
        cost(case, victims, elastic)
        for victims, elastic in candidate_sets(case)
        if fits_without(case, victims)
    ]
    if not gone:
        assert not feasible, f"no victims chosen, but {min(feasible)} would do"
        return
    chosen = cost(case, gone, is_elastic(case, gone))
    assert chosen == min(feasible), (chosen, min(feasible), describe(case), sorted(gone))


@settings(max_examples=40)
@given(cases(max_gangs=14))
def test_with_many_units_no_victim_can_be_spared(case: Case) -> None:
    result = run_cycle(case.snapshot())
    check_rules(case, result)
    groups = {e.group for e in result.evictions}
    for group in groups:
        kept = frozenset(e.pod for e in result.evictions if e.group != group)
        assert not fits_without(case, kept), f"{group} was evicted for nothing"


def describe(case: Case) -> str:
    """A short account of a case for failure messages."""
    lines = [f"nodes {[n.name for n in case.nodes]}"]
    for info in case.groups:
        pods = [(p.name, p.node_name, p.requests[GPU] // 1000) for p in case.running
                if p.group == info.name]  # fmt: skip
        lines.append(f"{info.name} min {info.min_member} {info.priority_class_name} {pods}")
    topology = case.high.topology.required if case.high.topology else None
    lines.append(f"high {len(case.waiting)} x {case.waiting[0].requests[GPU] // 1000} {topology}")
    return "\n".join(lines)


@settings(max_examples=80)
@given(cases(queues=True))
def test_reclaim_takes_only_what_leaves_each_queue_at_or_above_its_guarantee(case: Case) -> None:
    result = run_cycle(case.snapshot(), now=NOW)
    check_rules(case, result)


@settings(max_examples=100)
@given(
    cases(queues=True),
    st.sampled_from(("team-a", "team-b", "default")),
    st.sampled_from([c.value for c in CLASSES]),
    st.booleans(),
    st.booleans(),
    st.frozensets(st.sampled_from(("team-a", "team-b"))),
)
def test_priority_bounds_are_the_units_and_say_exactly_whether_any_may_be_taken(
    case: Case, queue: str, priority: int, preempt: bool, reclaim: bool, closed: frozenset[str]
) -> None:
    """The cycle skips building units when `may_take` says no: it must never say no
    while some unit may be taken (here it is exact: the preemptor runs nothing)."""
    index = case.snapshot().index
    priorities = {work.key: work.priority for work in build_works(index)}
    units = build_units(index, priorities, 0.0)
    by_queue: dict[str, list[int]] = {}
    for unit in units:
        by_queue.setdefault(unit.queue, []).append(unit.priority)
    expected = {name: (min(values), max(values)) for name, values in by_queue.items()}
    assert priority_bounds(index, priorities) == expected
    claim = Claim(PREEMPTOR, queue, priority, preempt, reclaim, (queue,), {}, closed)
    possible = any(claim.reason(unit) is not None for unit in units)
    assert claim.may_take(expected) == possible


@settings(max_examples=80)
@given(cases(), st.data())
def test_the_units_near_some_nodes_are_those_of_the_groups_with_a_pod_there(
    case: Case, data: st.DataObject
) -> None:
    """A reservation's renewal and take-back build only the units of the groups on its
    nodes (`near`, looked up through `ClusterIndex.groups_on`): none may be missing
    (every unit with a pod there is one of them), none added."""
    names = [n.name for n in case.nodes]
    near = data.draw(st.frozensets(st.sampled_from(names)))
    index = case.snapshot().index
    priorities = {work.key: work.priority for work in build_works(index)}

    def seen(units: tuple[Unit, ...]) -> list[tuple[str, bool, tuple[str, ...]]]:
        return [(u.key, u.whole, tuple(p.key for p in u.pods)) for u in units]

    every = build_units(index, priorities, 0.0)
    groups = {u.group for u in every if any(p.node_name in near for p in u.pods)}
    there = tuple(u for u in every if u.group in groups)
    assert seen(build_units(index, priorities, 0.0, near=near)) == seen(there)
