"""What may be evicted, in units that keep gangs whole.

A unit is either one elastic pod above its group's minMember (evicting it leaves the
gang intact) or every running pod of a group (a whole gang), or a lone pod of ours. A
Kubernetes PodGroup of disruptionMode Single has every pod elastic: it may lose one.
Pods no Phalanx group owns and that we did not place (other schedulers') are never in
a unit. Units are built and sorted once per cycle, cheapest first: lowest priority,
then the least work lost, then fewest GPUs, then fewest pods, then the most recently
started (for equal work lost: a clock behind the pods' start times counts none).

The work an eviction loses is what its user loses: the GPU-seconds done since the
job's last checkpoint (its group's annotation `checkpointed-at`, or the last multiple
of its `checkpointIntervalSeconds` since it started), else since it started. An
hour-old job that saved nothing costs more than a day-old one that saved a minute ago.
`weigh_lost` False keeps the order before this was weighed (fewest GPUs, then pods,
then the most recently started), for the simulator's comparison.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from math import floor
from operator import attrgetter

from phalanx.core.model.inputs import DISRUPT_SINGLE, GroupInfo, PodInfo
from phalanx.core.model.names import DEFAULT_QUEUE, GPU, GroupKey
from phalanx.core.snapshot.index import ClusterIndex, GroupPods
from phalanx.core.snapshot.resources import charged, total_of


@dataclass(slots=True, eq=False)
class Unit:
    """Pods evicted together. `whole`: a whole gang (or lone pod), not an elastic pod;
    `nodes[i]` is the node index of `pods[i]`; `started` the latest start of its pods;
    `spare`: for an elastic pod, how many pods of its group may go (above minMember).
    `ran`: some pod of it has a start time; `lost`: GPU-seconds of work its eviction
    loses, done since `saved` (its last checkpoint, when `checkpointed`, else its start);
    `rank`: its place in the order (`order`). Not frozen, though never changed: units
    are built by the thousand every cycle a gang waits, and a frozen dataclass's
    `__init__` took a fifth of that."""

    key: str
    group: GroupKey | None
    queue: str
    priority: int
    pods: tuple[PodInfo, ...]
    nodes: tuple[int, ...]
    requests: Mapping[str, int]
    whole: bool
    started: float
    gpus: int
    spare: int = 0
    ran: bool = False
    lost: float = 0.0
    saved: float = 0.0
    checkpointed: bool = False
    rank: tuple[int, float, float, float, float, str] = (0, 0.0, 0.0, 0.0, 0.0, "")

    def order(self) -> tuple[int, float, float, float, float, str]:
        """Preference: lower is evicted first."""
        return self.rank


def build_units(
    index: ClusterIndex,
    group_priority: dict[GroupKey, int],
    now: float,
    weigh_lost: bool = True,
    near: frozenset[str] | None = None,
) -> tuple[Unit, ...]:
    """Every evictable unit of the snapshot, cheapest first. `group_priority` is each
    group's priority as the cycle computed it (its PriorityClass, else its pods');
    `now` the cycle's time, for the work each would lose.
    `near` (node names): only the units of groups and lone pods with a pod on one of
    them (every unit with a pod there is among them), for a question about a few nodes
    (a reservation's renewal): building the units of 10,000 running groups for it was
    a tenth of a busy simulator cycle, and asking each group's pods whether one is on
    them a twentieth: the groups with any pod there (`ClusterIndex.groups_on`) are asked
    alone."""
    refused = index.eviction_refused
    units: list[Unit] = []
    nearby = index.groups_on(near) if near is not None else frozenset()
    for key, group, pods, running in index.evictable_groups:
        if near is not None and (key not in nearby or near.isdisjoint(map(_NODE_NAME, running))):
            continue
        queue = group.queue if group is not None else DEFAULT_QUEUE
        priority = _group_priority(index, key, pods, group_priority)
        minimum = _kept_together(group)
        units.extend(_group_units(index, key, queue, priority, pods, running, minimum, refused))
    for pod in _evictable_loose(index):
        if pod.key not in refused and (near is None or pod.node_name in near):
            priority = index.pod_priority(pod)
            units.append(_unit(index, pod.key, None, DEFAULT_QUEUE, priority, (pod,), whole=True))
    for unit in units:
        _weigh(unit, index, now, weigh_lost)
    units.sort(key=Unit.order)
    return tuple(units)


def _weigh(unit: Unit, index: ClusterIndex, now: float, weigh_lost: bool) -> None:
    """Set the work the unit's eviction loses, and its rank."""
    group = index.groups.get(unit.group) if unit.group is not None else None
    saved, checkpointed = last_save(group, unit.started if unit.ran else None, now)
    gpus = unit.gpus + sum(p.gpu_milli for p in unit.pods)  # fractional pods count their part
    unit.saved, unit.checkpointed = saved, checkpointed
    unit.lost = gpus / 1000 * max(0.0, now - saved)
    if weigh_lost:
        unit.rank = (unit.priority, unit.lost, unit.gpus, len(unit.pods), -unit.started, unit.key)
    else:
        unit.rank = (unit.priority, unit.gpus, len(unit.pods), -unit.started, 0.0, unit.key)


def last_save(group: GroupInfo | None, started: float | None, now: float) -> tuple[float, bool]:
    """Since when a running unit's work would be lost, and whether that is a checkpoint:
    the later of its group's reported checkpoint and the last multiple of its declared
    interval since it started, else its start. A checkpoint from before the start (an
    earlier run's) does not count; a start not known (None) is taken as now: nothing ran."""
    if started is None:
        return now, False
    saved, checkpointed = started, False
    interval = group.checkpoint_interval_seconds if group is not None else None
    if interval and now - started >= interval:
        saved, checkpointed = started + floor((now - started) / interval) * interval, True
    reported = group.checkpointed_at if group is not None else None
    if reported is not None and saved < reported:
        saved, checkpointed = min(reported, now), True
    return saved, checkpointed


_NODE_NAME = attrgetter("node_name")


def _kept_together(group: GroupInfo | None) -> int:
    """How many running pods of a group only go together: its minMember, or none for a
    Kubernetes PodGroup of disruptionMode Single (its pods may be evicted one by one)."""
    if group is None:
        return 1
    return 0 if group.disruption == DISRUPT_SINGLE else group.min_member


def priority_bounds(
    index: ClusterIndex, group_priority: dict[GroupKey, int]
) -> dict[str, tuple[int, int]]:
    """Per queue, the lowest and highest priority of its units, without building them
    (no requests summed, nothing sorted: a cycle where no eviction can help reads only
    this). Exact while no eviction is refused (a group whose every pod is refused may
    have no unit yet count here): a queue absent here has no unit, and none of its
    units is below its lowest."""
    priorities: dict[str, set[int]] = {}  # per queue: a set, not a call per group
    for key, group, pods, _ in index.evictable_groups:
        queue = group.queue if group is not None else DEFAULT_QUEUE
        priority = group_priority.get(key)
        if priority is None:
            priority = _group_priority(index, key, pods, group_priority)
        found = priorities.get(queue)
        if found is None:
            found = priorities[queue] = set()
        found.add(priority)
    for pod in _evictable_loose(index):
        priorities.setdefault(DEFAULT_QUEUE, set()).add(index.pod_priority(pod))
    return {queue: (min(found), max(found)) for queue, found in priorities.items()}


def _evictable_loose(index: ClusterIndex) -> Iterator[PodInfo]:
    """Running pods of ours in no group, on known nodes."""
    position = index.node_position
    return (pod for pod in index.loose_running if pod.node_name in position)


def _group_priority(
    index: ClusterIndex, key: GroupKey, pods: GroupPods, group_priority: dict[GroupKey, int]
) -> int:
    """The cycle's priority of the group, else its pods' (else the default)."""
    if key in group_priority:
        return group_priority[key]
    return index.default_priority if pods.priority is None else pods.priority


def _group_units(
    index: ClusterIndex,
    key: GroupKey,
    queue: str,
    priority: int,
    pods: GroupPods,
    running: tuple[PodInfo, ...],
    min_member: int,
    refused: frozenset[str],
) -> list[Unit]:
    """`running`: the group's running pods on known nodes (never empty)."""
    units: list[Unit] = []
    if not refused or not any(p.key in refused for p in running):
        exact = len(running) == len(pods.running) and not any(p.terminating for p in pods.pods)
        requests = pods.running_requests if exact else None
        units.append(_unit(index, key, key, queue, priority, running, True, requests))
    spare = len(running) - min_member
    if spare > 0:  # any of them may go, as long as at most `spare` of the group do
        units.extend(
            _unit(index, p.key, key, queue, priority, (p,), False, spare=spare)
            for p in running
            if not refused or p.key not in refused
        )
    return units


def _unit(
    index: ClusterIndex,
    key: str,
    group: GroupKey | None,
    queue: str,
    priority: int,
    placed: tuple[PodInfo, ...],
    whole: bool,
    requests: Mapping[str, int] | None = None,
    spare: int = 0,
) -> Unit:
    """`placed`: pods on known nodes; `requests`: their total, when the caller knows it."""
    position = index.node_position
    if requests is None:
        nodes = index.node_by_name
        if len(placed) == 1:
            requests = charged(placed[0], nodes)
        else:
            requests = total_of(charged(p, nodes) for p in placed)
    starts = [p.started_at for p in placed if p.started_at is not None]
    return Unit(
        key=key,
        group=group,
        queue=queue,
        priority=priority,
        pods=placed,
        nodes=tuple([position[p.node_name] for p in placed]),  # type: ignore[index]
        requests=requests,
        whole=whole,
        started=max(starts) if starts else 0.0,
        gpus=requests.get(GPU, 0),
        spare=spare,
        ran=bool(starts),
    )


def within_spare(units: Sequence[Unit]) -> bool:
    """No group loses more elastic pods than it has above minMember."""
    elastic = [u for u in units if not u.whole]
    if len(elastic) < 2:
        return True
    taken = Counter(u.group for u in elastic)
    return all(taken[u.group] <= u.spare for u in elastic)
