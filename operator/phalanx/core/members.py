"""What each group brings to a cycle: its pods on nodes, the pods to place, and how
many of those must go together (the gang), in a stable order."""

from __future__ import annotations

import re
from dataclasses import dataclass

from phalanx.core.ids import DEFAULT_QUEUE, GroupKey
from phalanx.core.model import GroupInfo, PodInfo
from phalanx.core.result import PodCounts
from phalanx.core.snapshot import ClusterIndex, is_waiting
from phalanx.core.status import Reason, StatusCode

_DIGITS = re.compile(r"(\d+)")


@dataclass(frozen=True, slots=True)
class Problem:
    """Why a group cannot even be tried this cycle."""

    code: StatusCode
    reason: Reason
    message: str


@dataclass(frozen=True, slots=True)
class GroupWork:
    """`waiting` lists the gang (its first `mandatory` pods, in name order) then the
    elastic extras; `running` are the group's unfinished pods already on nodes."""

    key: GroupKey
    group: GroupInfo | None
    namespace: str
    queue: str
    min_member: int
    priority: int
    creation: float
    running: tuple[PodInfo, ...]
    waiting: tuple[PodInfo, ...]
    mandatory: int
    counts: PodCounts
    problem: Problem | None = None

    @property
    def gang(self) -> tuple[PodInfo, ...]:
        return self.waiting[: self.mandatory]

    @property
    def extras(self) -> tuple[PodInfo, ...]:
        return self.waiting[self.mandatory :]


def natural_key(name: str) -> tuple[tuple[int, int, str], ...]:
    """worker-2 before worker-10."""
    return tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part) for part in _DIGITS.split(name)
    )


def build_works(index: ClusterIndex) -> list[GroupWork]:
    """One entry per group: PodGroups, groups referenced by pods, and groups of one."""
    keys = set(index.groups) | set(index.invalid_groups)
    keys |= {key for key, pods in index.members.items() if any(is_waiting(p) for p in pods)}
    works = [_group_work(index, key) for key in sorted(keys)]
    works.extend(_single_work(index, key, pod) for key, pod in sorted(index.singles.items()))
    works.sort(key=lambda work: work.key)
    return works


def _group_work(index: ClusterIndex, key: GroupKey) -> GroupWork:
    pods = index.members.get(key, [])
    group = index.groups.get(key)
    running = tuple(p for p in pods if p.node_name and not p.finished)
    waiting = sorted(
        (p for p in pods if is_waiting(p)), key=lambda p: (natural_key(p.name), p.name)
    )
    counts = _counts(pods, running)
    namespace = key.split("/", 1)[0]
    priority = _priority(index, group, pods)
    if group is None:
        invalid = index.invalid_groups.get(key)
        missing = (
            Problem(StatusCode.ERROR, Reason.INVALID_SPEC, str(invalid))
            if invalid is not None
            else Problem(
                StatusCode.UNSCHEDULABLE,
                Reason.GROUP_NOT_FOUND,
                f"pods name group {key}, which does not exist",
            )
        )
        return GroupWork(
            key, None, namespace, DEFAULT_QUEUE, 1, priority, 0.0, running, (), 0, counts, missing
        )
    gang, extras, problem = _split_gang(group, running, waiting)
    if not running and not waiting and (counts.succeeded or counts.failed):
        message = f"all pods finished: {counts.succeeded} succeeded, {counts.failed} failed"
        problem = Problem(StatusCode.SUCCESS, Reason.FINISHED, message)
    return GroupWork(
        key=key,
        group=group,
        namespace=namespace,
        queue=group.queue,
        min_member=group.min_member,
        priority=priority,
        creation=group.creation,
        running=running,
        waiting=gang + extras,
        mandatory=len(gang) if problem is None else 0,
        counts=counts,
        problem=problem,
    )


def _single_work(index: ClusterIndex, key: GroupKey, pod: PodInfo) -> GroupWork:
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
        mandatory=1,
        counts=PodCounts(pending=1),
    )


def _split_gang(
    group: GroupInfo, running: tuple[PodInfo, ...], waiting: list[PodInfo]
) -> tuple[tuple[PodInfo, ...], tuple[PodInfo, ...], Problem | None]:
    """The pods that must be placed together: role minima first, then up to minMember."""
    total = len(running) + len(waiting)
    if total < group.min_member:
        message = f"{total} of {group.min_member} pods exist"
        return (
            (),
            tuple(waiting),
            Problem(StatusCode.UNSCHEDULABLE, Reason.GANG_INCOMPLETE, message),
        )
    chosen: list[PodInfo] = []
    for role in group.roles:
        have = sum(1 for p in running if p.role == role.name)
        candidates = [p for p in waiting if p.role == role.name]
        need = max(0, role.min_member - have)
        if len(candidates) < need:
            message = (
                f"role {role.name} needs {role.min_member} pods, {have + len(candidates)} exist"
            )
            problem = Problem(StatusCode.UNSCHEDULABLE, Reason.GANG_INCOMPLETE, message)
            return (), tuple(waiting), problem
        chosen.extend(candidates[:need])
    picked = {p.key for p in chosen}
    rest = [p for p in waiting if p.key not in picked]
    missing = group.min_member - len(running) - len(chosen)
    if missing > 0:
        chosen.extend(rest[:missing])
        rest = rest[missing:]
    chosen.sort(key=lambda p: (natural_key(p.name), p.name))
    return tuple(chosen), tuple(rest), None


def _counts(pods: list[PodInfo], running: tuple[PodInfo, ...]) -> PodCounts:
    return PodCounts(
        pending=sum(1 for p in pods if not p.node_name and not p.finished),
        running=len(running),
        succeeded=sum(1 for p in pods if p.phase == "Succeeded"),
        failed=sum(1 for p in pods if p.phase == "Failed"),
    )


def _priority(index: ClusterIndex, group: GroupInfo | None, pods: list[PodInfo]) -> int:
    """The group's PriorityClass if it names a known one, else its pods' highest."""
    if group is not None and group.priority_class_name in index.priority_values:
        return index.priority_values[group.priority_class_name]
    live = [index.pod_priority(p) for p in pods if not p.finished]
    return max(live) if live else index.default_priority
