"""What each group brings to a cycle: its pods on nodes, the pods to place, and how
many of those must go together (the gang), in a stable order."""

from __future__ import annotations

import re
from dataclasses import dataclass
from operator import attrgetter

from phalanx.core.model.inputs import DISRUPT_ALL, GroupInfo, PodInfo
from phalanx.core.model.names import DEFAULT_QUEUE, GPU, GroupKey
from phalanx.core.model.result import GroupDecision, PodCounts
from phalanx.core.model.status import Problem, Reason, StatusCode
from phalanx.core.snapshot.index import ClusterIndex, GroupPods
from phalanx.core.snapshot.resources import Resources, gpu_charge
from phalanx.core.snapshot.shapes import Shape, demand_of, shapes_of

_DIGITS = re.compile(r"(\d+)", re.ASCII)
__all__ = ["GroupWork", "Problem", "Settled", "build_works", "natural_key"]

_NO_PODS = GroupPods((), (), (), PodCounts(), False, None, None, {})


@dataclass(slots=True)
class GroupWork:
    """`waiting` lists the gang (its first `mandatory` pods) then the elastic extras,
    with `shapes` aligned to it; `running` are the group's unfinished pods on nodes."""

    key: GroupKey
    group: GroupInfo | None
    namespace: str
    queue: str
    min_member: int
    priority: int
    creation: float
    running: tuple[PodInfo, ...]
    waiting: tuple[PodInfo, ...]
    shapes: tuple[Shape, ...]
    mandatory: int
    counts: PodCounts
    problem: Problem | None = None
    pods: GroupPods | None = None
    single: bool = False  # a pod of ours that names no group: a group of one

    @property
    def gang(self) -> tuple[PodInfo, ...]:
        return self.waiting[: self.mandatory]

    @property
    def extras(self) -> tuple[PodInfo, ...]:
        return self.waiting[self.mandatory :]

    @property
    def partial(self) -> bool:
        """Some of the gang is on nodes and some of its minimum still waits: bound pods
        that hold GPUs and cannot start their work until the rest joins them (the
        admission order's view; partial.py's `is_partial` judges a decision, for release)."""
        return self.mandatory > 0 and bool(self.running)

    def gang_demand(self) -> tuple[tuple[Shape, int], ...]:
        return demand_of(self.shapes[: self.mandatory])

    def gang_requests(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for shape, count in self.gang_demand():
            for name, amount in shape.requests:
                total[name] = total.get(name, 0) + amount * count
            if shape.fractional:  # not placed yet: charged as `resources.charged` does
                part = gpu_charge(shape.gpu_milli, shape.gpu_memory, None)
                total[GPU] = total.get(GPU, 0) + part * count
        return total

    def running_requests(self) -> Resources:
        return self.pods.running_requests if self.pods is not None else {}


@dataclass(slots=True, eq=False)
class Settled:
    """A group that runs with nothing to place, as a cycle found it: its work, and the
    decision a cycle that does not try it gives it (set by `run_cycle`, with the config
    it was made under). Both depend on the group's PodGroup, its pods' summary and its
    priority alone, so the next cycle over the same cluster takes them over while the
    PodGroup and the summary are the very same objects (`ClusterIndex` keeps a group's
    summary while its pods are) and the priority is the same: in a late Alibaba
    simulator cycle 8,300 of 10,800 groups are such, and making their works and
    decisions anew was a ninth of the cycle."""

    work: GroupWork
    decision: GroupDecision | None = None
    config: object = None  # the SchedulerConfig `decision` was made under


def _settled(
    index: ClusterIndex, key: GroupKey, group: GroupInfo, pods: GroupPods, priority: int
) -> GroupWork:
    """The work of a group running with nothing to place: the previous cycle's, if the
    group, its summary and its priority are what it was made from (`Settled`)."""
    kept = index.settled_before.get(key)
    if not (
        isinstance(kept, Settled)
        and kept.work.group is group
        and kept.work.pods is pods
        and kept.work.priority == priority
    ):
        kept = Settled(GroupWork(
            key, group, group.namespace, group.queue, group.min_member, priority,
            group.creation, pods.running, (), (), 0, pods.counts, None, pods,
        ))  # fmt: skip
    index.settled[key] = kept
    return kept.work


def natural_key(name: str) -> tuple[tuple[int, int, str], ...]:
    """worker-2 before worker-10. The split puts the runs of digits at odd places; a run
    compares by its length without leading zeros, then its text, which is its value's
    order without `int` (which refuses thousands of digits, and "²" passes `isdigit`)."""
    return tuple(
        (0, len(number := part.lstrip("0")), number) if odd % 2 else (1, 0, part)
        for odd, part in enumerate(_DIGITS.split(name))
    )


def build_works(index: ClusterIndex) -> list[GroupWork]:
    """One entry per group: PodGroups, groups referenced by pods, and groups of one."""
    keys = set(index.groups) | set(index.invalid_groups)
    keys |= {key for key, pods in index.members.items() if pods.waiting}
    works = [_group_work(index, key) for key in sorted(keys)]
    works.extend(_single_work(index, key, pod) for key, pod in sorted(index.singles.items()))
    works.sort(key=_KEY)
    return works


_KEY = attrgetter("key")


def _group_work(index: ClusterIndex, key: GroupKey) -> GroupWork:
    pods = index.members.get(key, _NO_PODS)
    group = index.groups.get(key)
    counts = pods.counts
    priority = _priority(index, group, pods)
    if group is None:
        return GroupWork(
            key, None, key.split("/", 1)[0], DEFAULT_QUEUE, 1, priority, 0.0, pods.running,
            (), (), 0, counts, _missing_group(index, key), pods,
        )  # fmt: skip
    running = pods.running
    if running and not pods.waiting and not group.roles and len(running) >= group.min_member:
        # running, nothing to place: most groups of a busy cluster (arguments by position:
        # by keyword, this call was a twentieth of a late Alibaba simulator cycle)
        return _settled(index, key, group, pods, priority)
    gang, extras, problem = _split_gang(group, running, pods.waiting)
    problem = _invalid_pod(pods.waiting) or _disrupted(group, running) or problem
    if not running and not pods.waiting and (counts.succeeded or counts.failed):
        message = f"all pods finished: {counts.succeeded} succeeded, {counts.failed} failed"
        problem = Problem(StatusCode.SUCCESS, Reason.FINISHED, message)
    waiting = gang + extras
    return GroupWork(
        key=key,
        group=group,
        namespace=group.namespace,
        queue=group.queue,
        min_member=group.min_member,
        priority=priority,
        creation=group.creation,
        running=pods.running,
        waiting=waiting,
        shapes=shapes_of(waiting, uniform=pods.shape) if waiting else (),
        mandatory=len(gang) if problem is None else 0,
        counts=counts,
        problem=problem,
        pods=pods,
    )


def _missing_group(index: ClusterIndex, key: GroupKey) -> Problem:
    invalid = index.invalid_groups.get(key)
    if invalid is not None:
        return Problem(StatusCode.ERROR, Reason.INVALID_SPEC, str(invalid))
    message = f"pods name group {key}, which does not exist"
    return Problem(StatusCode.UNSCHEDULABLE, Reason.GROUP_NOT_FOUND, message)


def _disrupted(group: GroupInfo, running: tuple[PodInfo, ...]) -> Problem | None:
    """A group of disruptionMode All that ran whole and lost pods is never topped up with
    replacements placed alone: its running pods are released (`partial`) and the whole
    group is placed again together."""
    if group.disruption != DISRUPT_ALL or not group.ran_whole:
        return None
    if not 0 < len(running) < group.min_member:
        return None
    message = (f"{len(running)} of {group.min_member} pods are left and its disruptionMode is "
               "All: the group is placed again whole, not one pod at a time")
    return Problem(StatusCode.UNSCHEDULABLE, Reason.GANG_INCOMPLETE, message)


def _invalid_pod(waiting: tuple[PodInfo, ...]) -> Problem | None:
    """A waiting pod that cannot be placed as written stops its whole gang (placing the
    others would start a gang that cannot complete), and the message names it."""
    for pod in waiting:
        if pod.invalid:
            message = f"pod {pod.name}: {pod.invalid}"
            return Problem(StatusCode.ERROR, Reason.INVALID_SPEC, message)
    return None


def _single_work(index: ClusterIndex, key: GroupKey, pod: PodInfo) -> GroupWork:
    problem = _invalid_pod((pod,))
    return GroupWork(
        key=key,
        group=None,
        namespace=pod.namespace,
        queue=DEFAULT_QUEUE,
        min_member=1,
        priority=index.pod_priority(pod),
        creation=pod.creation,
        running=(),
        waiting=(pod,),
        shapes=shapes_of((pod,)),
        mandatory=0 if problem else 1,
        counts=PodCounts(pending=1),
        problem=problem,
        single=True,
    )


def _split_gang(
    group: GroupInfo, running: tuple[PodInfo, ...], waiting: tuple[PodInfo, ...]
) -> tuple[tuple[PodInfo, ...], tuple[PodInfo, ...], Problem | None]:
    """The pods that must be placed together: role minima first, then up to minMember.

    Pods keep name order; with sub-groups, natural order (worker-2 before worker-10),
    since every consecutive `size` pods form one sub-group."""
    total = len(running) + len(waiting)
    if total < group.min_member:
        message = f"{total} of {group.min_member} pods exist"
        return (), waiting, Problem(StatusCode.UNSCHEDULABLE, Reason.GANG_INCOMPLETE, message)
    missing = group.min_member - len(running)
    if not group.roles:
        gang, rest = waiting[: max(0, missing)], waiting[max(0, missing) :]
    else:
        chosen: list[PodInfo] = []
        for role in group.roles:
            have = sum(1 for p in running if p.role == role.name)
            candidates = [p for p in waiting if p.role == role.name]
            need = max(0, role.min_member - have)
            if len(candidates) < need:
                count = have + len(candidates)
                message = f"role {role.name} needs {role.min_member} pods, {count} exist"
                problem = Problem(StatusCode.UNSCHEDULABLE, Reason.GANG_INCOMPLETE, message)
                return (), waiting, problem
            chosen.extend(candidates[:need])
        picked = {p.key for p in chosen}
        others = [p for p in waiting if p.key not in picked]
        fill = max(0, missing - len(chosen))
        chosen.extend(others[:fill])
        gang = tuple(sorted(chosen, key=lambda p: p.name))
        rest = tuple(others[fill:])
    sub_group = group.topology.sub_group if group.topology is not None else None
    if sub_group is not None and sub_group.by_role:  # one sub-group per role, in role order
        order = {role.name: i for i, role in enumerate(group.roles)}
        gang = tuple(sorted(gang, key=lambda p: (order.get(p.role or "", len(order)),
                                                 natural_key(p.name), p.name)))
    elif sub_group is not None:
        gang = tuple(sorted(gang, key=lambda p: (natural_key(p.name), p.name)))
    return gang, rest, None


def _priority(index: ClusterIndex, group: GroupInfo | None, pods: GroupPods) -> int:
    """The group's own priority (Kubernetes' PodGroup spec.priority), else its PriorityClass
    if it names a known one, else its pods' highest."""
    if group is not None and group.priority is not None:
        return group.priority
    if group is not None and group.priority_class_name in index.priority_values:
        return index.priority_values[group.priority_class_name]
    return index.default_priority if pods.priority is None else pods.priority
