"""The indexes every cycle reads of a snapshot: sorted, de-duplicated views, each group's
pods by state (`GroupPods`), per-node free capacity and the topology trees; built once per
snapshot, taking unchanged parts over from the previous one."""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

from phalanx.core.model.device_share import DEVICE
from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.inputs import (
    GroupInfo,
    NodeInfo,
    PodInfo,
    PriorityClassInfo,
    QueueInfo,
)
from phalanx.core.model.names import (
    DEFAULT_QUEUE,
    GPU,
    PODS,
    GroupKey,
    key_of,
)
from phalanx.core.model.result import PodCounts
from phalanx.core.model.status import Exclusion
from phalanx.core.snapshot.devices import (
    DeviceUsage,
    device_usage,
    holds_gpus,
    owned_whole_free,
    whole_free,
)
from phalanx.core.snapshot.ours import is_ours, is_waiting
from phalanx.core.snapshot.predicates import NO_CONSTRAINTS, static_exclusion
from phalanx.core.snapshot.resources import NO_NODES, charged
from phalanx.core.snapshot.shapes import Shape, same_shape, shape_of
from phalanx.topology.tree import DomainTree, tree_for

if TYPE_CHECKING:
    from phalanx.core.snapshot.picture import Snapshot

UNLIMITED_PODS = 1 << 30
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class GroupPods:
    """A group's pods split by state, in name order. `uniform`: every waiting pod asks
    for the same resources under the same constraints (the usual gang), so `shape`
    stands for all of them. Terminating pods are neither running nor waiting, but
    `running_requests` (queue usage) counts them while they are on a node."""

    pods: tuple[PodInfo, ...]
    running: tuple[PodInfo, ...]
    waiting: tuple[PodInfo, ...]
    counts: PodCounts
    uniform: bool
    priority: int | None
    shape: Shape | None
    running_requests: dict[str, int]

    @staticmethod
    def of(
        pods: list[PodInfo],
        priority_of: Callable[[PodInfo], int],
        nodes: Mapping[str, NodeInfo] = NO_NODES,
    ) -> GroupPods:
        members = [p for p in pods if not p.terminating]  # the others only hold capacity
        running = tuple(p for p in members if p.node_name and not p.finished)
        waiting = tuple(p for p in members if is_waiting(p))
        first = waiting[0] if waiting else None
        uniform = first is not None and all(same_shape(first, p) for p in waiting)
        live = [priority_of(p) for p in pods if not p.finished]
        return GroupPods(
            pods=tuple(pods),
            running=running,
            waiting=waiting,
            counts=_counts(pods),
            uniform=uniform,
            priority=max(live) if live else None,
            shape=shape_of(first) if uniform and first is not None else None,
            running_requests=total_requests(
                [p for p in pods if p.node_name and not p.finished], nodes
            ),
        )


def _counts(pods: list[PodInfo]) -> PodCounts:
    phases = Counter(p.phase for p in pods)
    running, succeeded, failed = phases["Running"], phases["Succeeded"], phases["Failed"]
    return PodCounts(len(pods) - running - succeeded - failed, running, succeeded, failed)


class ClusterIndex:
    """Sorted, de-duplicated views of a snapshot plus per-node free capacity.

    Given the `previous` index of the same cluster (the operator's last cycle), a group
    whose pods are the very objects it summarized keeps its `GroupPods`, and a node that
    is the very same object with the very same pods on it keeps its free capacity: the
    operator's cache parses an object anew for each new version only, so most groups
    and nodes are unchanged between cycles, and summarizing every group again was most
    of the index's cost (`python -m bench.e2e.snapshot`). The cycle on it takes over, in the
    same way, the work and decision of a group that runs with nothing to place from the
    previous index's cycle (`settled_before`, checked by `phalanx.core.admission.members.Settled`).
    The result is the same as without.
    """

    def __init__(self, snapshot: Snapshot, previous: ClusterIndex | None = None) -> None:
        self.nodes: tuple[NodeInfo, ...] = _unique(snapshot.nodes, lambda n: n.name)
        self.node_position = {node.name: i for i, node in enumerate(self.nodes)}
        self.node_by_name = {node.name: node for node in self.nodes}
        self.pods: tuple[PodInfo, ...] = _unique(snapshot.pods, lambda p: p.key)
        self.groups = {g.key: g for g in _unique(snapshot.groups, lambda g: g.key)}
        self.queues = {q.name: q for q in _unique(snapshot.queues, lambda q: q.name)}
        self.queues.setdefault(DEFAULT_QUEUE, QueueInfo(name=DEFAULT_QUEUE))
        self.topologies = {t.name: t for t in _unique(snapshot.topologies, lambda t: t.name)}
        self.invalid = tuple(snapshot.invalid)
        self.eviction_refused = frozenset(snapshot.eviction_refused)
        self.invalid_groups = _invalid_groups(snapshot.invalid)
        self._index_priorities(snapshot.priority_classes)
        self._index_nodes(previous)
        self._index_usage(previous)
        self._index_members(previous)
        self.settled: dict[GroupKey, object] = {}
        """What this index's cycle found of the groups that run with nothing to place
        (`phalanx.core.admission.members.Settled`, which checks the type): filled by the cycle,
        then read by the next index's (`settled_before`)."""
        self.settled_before: Mapping[GroupKey, object] = (
            previous.settled if previous is not None else {})
        self._trees: dict[str | None, DomainTree] = {}
        for name in (None, *self.topologies):
            self.tree(name)

    def tree(self, topology: str | None) -> DomainTree:
        """The domain tree of a topology; None gives the flat tree (root over all nodes)."""
        tree = self._trees.get(topology)
        if tree is None:
            spec = self.topologies[topology] if topology is not None else None
            names = [node.name for node in self.nodes]
            tree = tree_for(spec, names, [node.labels for node in self.nodes])
            self._trees[topology] = tree
        return tree

    def pod_priority(self, pod: PodInfo) -> int:
        if pod.priority is not None:
            return pod.priority
        if pod.priority_class_name is not None:
            return self.priority_values.get(pod.priority_class_name, self.default_priority)
        return self.default_priority

    def _index_priorities(self, classes: Sequence[PriorityClassInfo]) -> None:
        unique = _unique(classes, lambda c: c.name)
        self.priority_values = {c.name: c.value for c in unique}
        self.preemption_policies = {c.name: c.preemption_policy for c in unique}
        defaults = [c.value for c in unique if c.global_default]
        self.default_priority = max(defaults) if defaults else 0
        chosen = [c for c in unique if c.global_default and c.value == self.default_priority]
        self.default_policy = chosen[0].preemption_policy if chosen else ""

    def device_usage(self, node: int) -> DeviceUsage:
        """The node's GPU devices as its pods hold them (`phalanx.core.snapshot.devices`), rebuilt
        when first asked."""
        usage = self._device_usage.get(node)
        if usage is None:
            pods = self.gpu_pods.get(node, ())
            usage = self._device_usage[node] = device_usage(self.nodes[node], pods)
        return usage

    def owned_whole_free(self, node: int) -> int | None:
        """`devices.owned_whole_free` of the node's pods, worked out when first asked."""
        found = self._owned_whole_free.get(node, -1)
        if found == -1:
            found = self._owned_whole_free[node] = owned_whole_free(
                self.nodes[node], self.gpu_pods.get(node, ()))
        return found

    @cached_property
    def evictable_groups(
        self,
    ) -> tuple[tuple[GroupKey, GroupInfo | None, GroupPods, tuple[PodInfo, ...]], ...]:
        """Groups with running pods on known nodes (those pods last) that may lose them: a
        PodGroup's, or pods that all are ours (others' pods are never victims). Found when
        first asked: a cycle asks for the eviction units' priority bounds, a reservation's
        renewal and its take-back, and each pass over 10,000 groups was a twentieth of a
        late Alibaba simulator cycle. Pods are all on known nodes but for a node
        just gone: only the groups with a pod there (`off_nodes`) have their pods sorted
        out (asking every group's pods was a third of this)."""
        known, off = self.node_position.__contains__, self.off_nodes
        found: list[tuple[GroupKey, GroupInfo | None, GroupPods, tuple[PodInfo, ...]]] = []
        for key, pods in self.members.items():
            running = pods.running
            if not running:
                continue
            group = self.groups.get(key)
            if group is None and not all(is_ours(p) for p in running):
                continue
            if key in off:
                running = tuple(p for p in running if known(p.node_name))
            if running:
                found.append((key, group, pods, running))
        return tuple(found)

    def groups_on(self, names: Iterable[str]) -> frozenset[GroupKey]:
        """The groups with an unfinished pod (running or terminating) on these nodes:
        where a question about a few nodes looks, instead of at every group's pods."""
        position, on_nodes = self.node_position, self.on_nodes
        return frozenset(
            GroupKey(key_of(pod.namespace, pod.group))
            for name in names
            if name in position
            for pod in on_nodes.get(position[name], ())
            if pod.group is not None
        )

    @cached_property
    def gpu_counts(self) -> tuple[int, ...]:
        """Every node's GPU devices (`NodeInfo.gpu_count`), for scans over all nodes."""
        return tuple(node.gpu_count for node in self.nodes)

    @cached_property
    def label_pairs(self) -> frozenset[tuple[str, str]]:
        """Every (key, value) label some node carries: a nodeSelector label outside it
        matches no node (`phalanx.core.explain.unplaced`); read only when a waiting pod has one."""
        return frozenset(pair for node in self.nodes for pair in node.labels.items())

    def allocatable_column(self, name: str) -> tuple[int, ...]:
        """Every node's allocatable amount of one resource (0 where it has none)."""
        column = self._allocatable.get(name)
        if column is None:
            column = self._allocatable[name] = tuple(
                node.allocatable.get(name, 0) for node in self.nodes
            )
        return column

    def _index_usage(self, previous: ClusterIndex | None) -> None:
        """Free capacity per node: allocatable minus requests of its unfinished pods. A
        node's free nvidia.com/gpu counts only devices nothing holds (x 1000): a device
        with part of it taken by a fractional pod is no longer free for whole-GPU pods.
        A node that is the very same object in the `previous` index, with the very same
        pods on it, keeps its figures from there: on a cluster whose pods run, taking
        every pod's requests off its node again is most of this."""
        self._allocatable: dict[str, tuple[int, ...]] = {}
        self.gpu_pods: dict[int, list[PodInfo]] = {}
        self._device_usage: dict[int, DeviceUsage] = {}
        self._owned_whole_free: dict[int, int | None] = {}
        self.on_nodes = self._pods_on_nodes()
        kept = self._kept_nodes(previous) if previous is not None else {}
        free: list[dict[str, int]] = []
        pods_free: list[int] = []
        shared: list[int] = []
        for index in range(len(self.nodes)):
            at = kept.get(index)
            if previous is None or at is None:
                usage = self._node_usage(index, self.on_nodes.get(index, ()))
            else:
                usage = self._keep(index, previous, at)
            free.append(usage[0])
            pods_free.append(usage[1])
            if usage[2]:
                shared.append(index)
        self.free: tuple[dict[str, int], ...] = tuple(free)
        self.pods_free: tuple[int, ...] = tuple(pods_free)
        self.shared_nodes: frozenset[int] = frozenset(shared)  # some device partly held

    def _index_nodes(self, previous: ClusterIndex | None) -> None:
        """What the nodes alone give (taken over if they are the very same objects)."""
        if previous is not None and len(previous.nodes) == len(self.nodes) and all(
                map(operator.is_, previous.nodes, self.nodes)):
            self.pods_allocatable: tuple[int, ...] = previous.pods_allocatable
            self.base_exclusions: tuple[Exclusion | None, ...] = previous.base_exclusions
            self.cluster_total: dict[str, int] = previous.cluster_total
            self.max_allocatable: dict[str, int] = previous.max_allocatable
            return
        self.pods_allocatable = tuple(
            node.allocatable[PODS] // 1000 if PODS in node.allocatable else UNLIMITED_PODS
            for node in self.nodes
        )
        self.base_exclusions = tuple(static_exclusion(node, NO_CONSTRAINTS) for node in self.nodes)
        total: dict[str, int] = {}
        largest: dict[str, int] = {}
        for node in self.nodes:
            for name, amount in node.allocatable.items():
                largest[name] = max(largest.get(name, 0), amount)
                if node.ready and not node.unschedulable:
                    total[name] = total.get(name, 0) + amount
        self.cluster_total = total
        self.max_allocatable = largest

    def _pods_on_nodes(self) -> dict[int, list[PodInfo]]:
        """The unfinished pods on each node (by position), in key order; the groups with
        such a pod on a node not in the snapshot (`off_nodes`) on the way."""
        on_nodes: dict[int, list[PodInfo]] = {}
        off_nodes: set[str] = set()
        position = self.node_position
        for pod in self.pods:
            if pod.node_name and not pod.finished:
                index = position.get(pod.node_name)
                if index is not None:
                    on_nodes.setdefault(index, []).append(pod)
                elif pod.group is not None:
                    off_nodes.add(key_of(pod.namespace, pod.group))
        self.off_nodes = frozenset(off_nodes)
        """Groups with an unfinished pod on a node the snapshot does not have (a node just
        gone): only their running pods need sorting out by node (`evictable_groups`)."""
        return on_nodes

    def _node_usage(self, index: int,
                    pods: Sequence[PodInfo]) -> tuple[dict[str, int], int, bool]:
        """The node's free resources and pod slots, and whether a device is partly held."""
        free = dict(self.nodes[index].allocatable)
        for pod in pods:
            for name, amount in pod.requests.items():
                free[name] = free.get(name, 0) - amount
        holders = [pod for pod in pods if holds_gpus(pod)]
        if holders:
            self.gpu_pods[index] = holders
        shared = any(pod.fractional for pod in holders)
        if shared:
            devices = whole_free(self.device_usage(index).used) * DEVICE
            free[GPU] = min(free.get(GPU, 0), devices)
        free.pop(PODS, None)
        return free, self.pods_allocatable[index] - len(pods), shared

    def _kept_nodes(self, previous: ClusterIndex) -> dict[int, int]:
        """Where `previous` holds the figures of a node (position -> its position there):
        the very same node object with the very same pods on it."""
        kept: dict[int, int] = {}
        old_position, old_nodes, old_on = previous.node_position, previous.nodes, previous.on_nodes
        for index, node in enumerate(self.nodes):
            at = old_position.get(node.name)
            if at is None or old_nodes[at] is not node:
                continue
            pods, before = self.on_nodes.get(index, ()), old_on.get(at, ())
            if len(pods) == len(before) and all(map(operator.is_, pods, before)):
                kept[index] = at
        return kept

    def _keep(self, index: int, previous: ClusterIndex,
              at: int) -> tuple[dict[str, int], int, bool]:
        """The node's figures as `previous` had them at `at` (a copy of its free resources:
        the core's state copies before it changes them, but nothing else needs to)."""
        if at in previous.gpu_pods:
            self.gpu_pods[index] = previous.gpu_pods[at]
        usage = previous._device_usage.get(at)
        if usage is not None:
            self._device_usage[index] = usage
        return dict(previous.free[at]), previous.pods_free[at], at in previous.shared_nodes

    def _index_members(self, previous: ClusterIndex | None) -> None:
        """Pods per group; a waiting pod of ours with no group is a group of one."""
        members: dict[GroupKey, list[PodInfo]] = {}
        singles: dict[GroupKey, PodInfo] = {}
        loose_running: list[PodInfo] = []
        for pod in self.pods:
            if pod.group is not None:
                members.setdefault(GroupKey(key_of(pod.namespace, pod.group)), []).append(pod)
            elif is_waiting(pod):
                singles[self._single_key(pod)] = pod
            elif pod.node_name and not pod.finished and is_ours(pod):
                loose_running.append(pod)
        by_name = self.node_by_name
        kept: Mapping[GroupKey, GroupPods] = (
            previous.members if previous is not None and self._same_priorities(previous) else {})
        self.members: dict[GroupKey, GroupPods] = {
            key: _kept(kept.get(key), pods, by_name, previous)
            or GroupPods.of(pods, self.pod_priority, by_name)
            for key, pods in members.items()
        }
        self.singles = singles
        self.loose_running = tuple(loose_running)
        self.loose_requests = total_requests(loose_running, by_name)

    def _same_priorities(self, other: ClusterIndex) -> bool:
        """Pods without a priority of their own are given the same one by both."""
        return (self.priority_values, self.default_priority) == (
            other.priority_values, other.default_priority)

    def _single_key(self, pod: PodInfo) -> GroupKey:
        key = GroupKey(pod.key)
        if key in self.groups or key in self.invalid_groups:
            return GroupKey(key_of(pod.namespace, f"pod:{pod.name}"))
        return key


def _kept(
    summary: GroupPods | None,
    pods: list[PodInfo],
    nodes: Mapping[str, NodeInfo],
    previous: ClusterIndex | None,
) -> GroupPods | None:
    """The previous index's summary of a group if it still holds: the very same pod
    objects in the same order, and a `gpu-memory` pod on a node on the very same node
    object (the node's GPU memory sets what the pod is charged)."""
    if summary is None or previous is None or len(summary.pods) != len(pods):
        return None
    before = previous.node_by_name
    for old, new in zip(summary.pods, pods, strict=True):
        if old is not new:
            return None
        if new.gpu_memory and new.node_name and (
                before.get(new.node_name) is not nodes.get(new.node_name)):
            return None
    return summary


def total_requests(
    pods: Sequence[PodInfo], nodes: Mapping[str, NodeInfo] = NO_NODES
) -> dict[str, int]:
    """What the pods count against their queue (`resources.charged`, on `nodes`), added up."""
    total: dict[str, int] = {}
    for pod in pods:
        for name, amount in charged(pod, nodes).items():
            total[name] = total.get(name, 0) + amount
    return total


def _unique(items: Sequence[_T], key: Callable[[_T], str]) -> tuple[_T, ...]:
    """Sorted by key; the first of duplicate keys wins."""
    by_key: dict[str, _T] = {}
    for item in items:
        by_key.setdefault(key(item), item)
    return tuple(by_key[k] for k in sorted(by_key))


def _invalid_groups(invalid: Sequence[InvalidObject]) -> dict[GroupKey, InvalidObject]:
    found: dict[GroupKey, InvalidObject] = {}
    for error in invalid:
        if error.kind in ("PodGroup", "CompositePodGroup") and "/" in error.name:
            found.setdefault(GroupKey(error.name), error)
    return found
