"""Per-cycle mutable capacity: free resources per node, and for every pod shape in use
the number of such pods each node and each topology domain can still take.

Aggregates are built once per shape and tree, then updated along the node's ancestor
path when a pod is placed or removed, so "no domain can hold this gang" is answered
from the aggregates without scanning nodes.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import cached_property

from phalanx.core.model.device_share import DeviceShare
from phalanx.core.model.inputs import PodInfo
from phalanx.core.model.names import PodKey
from phalanx.core.model.status import Exclusion, Problem
from phalanx.core.placement.device_rooms import DeviceRooms, _Rooms
from phalanx.core.placement.fragmentation import ShapeMix
from phalanx.core.placement.near_not_ready import nodes_near_not_ready
from phalanx.core.placement.rooms import RoomIndex
from phalanx.core.snapshot.devices import (
    holds_gpus,
    part_of,
)
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.snapshot.predicates import NO_CONSTRAINTS, Constraints, static_exclusion
from phalanx.core.snapshot.shapes import Shape, fit_count, fit_counts_of_columns
from phalanx.topology.tree import DomainTree

_NODE_WIDE = (Exclusion.NOT_READY, Exclusion.CORDONED)
HELD_PODS = 1 << 40


@dataclass(slots=True)
class ShapeCounts:
    """`levels[topology][level]`: the level's domains by room (built when first asked,
    then kept current); `leaves[(topology, leaf)]`: a leaf domain's nodes by room;
    `milli`: for a fractional shape, the part of one device it takes on each node."""

    shape: Shape
    static: list[Exclusion | None]
    node: list[int]
    milli: list[int] | None = None
    domains: dict[str | None, list[int]] = field(default_factory=dict)
    levels: dict[str | None, list[RoomIndex | None]] = field(default_factory=dict)
    leaves: dict[tuple[str | None, int], RoomIndex] = field(default_factory=dict)


@dataclass(slots=True)
class OpenNodes:
    """For pods of some constraints, at one generation: the nodes they may use that no
    hold keeps (`nodes`), what keeps them off the others (`excluded`, `held`), and the
    open nodes' free amounts sorted per resource, so "how many open nodes have less
    than X" is a bisection (one sort per resource and placement, not a scan per
    waiting shape)."""

    generation: int
    nodes: list[int]
    excluded: Counter[Exclusion]
    held: int
    too_many_pods: int
    _sorted: dict[str, list[int]] = field(default_factory=dict)

    def short(self, state: CycleState, name: str, amount: int) -> int:
        """Open nodes with less than `amount` of the resource free."""
        ordered = self._sorted.get(name)
        if ordered is None:
            column = state.column(name)
            ordered = self._sorted[name] = sorted([column[i] for i in self.nodes])
        return bisect_left(ordered, amount)


Grade = tuple[int, int, int, int]
"""A node's grade for one pod, lower is better (`phalanx.core.placement.node_choice.node_grade`)."""


@dataclass(slots=True)
class NodeGrades:
    """One node's grades for `least_fragmenting`: per pod size (`CycleState.grade_id`),
    None where its devices do not take the pod; `lost`: the node's fragmentation as it
    is (the same for every size, so worked out once), and what it is worked out from."""

    sizes: dict[int, Grade | None] = field(default_factory=dict)
    lost: float | None = None
    free: list[int] | None = None
    """Free milli of each device (`added_fragmentation`'s "before")."""
    ordered: tuple[int, ...] = ()
    """`free` in ascending order (as `ShapeMix.sorted_fragmentation` reads it), once set."""
    taken: dict[tuple[int, int], tuple[int, ...] | None] = field(default_factory=dict)
    """By (milli, whole devices; 0 for a fraction): the free milli of the devices once
    such a pod is on the node, its devices chosen by `choose_devices`, in ascending order
    (None: it does not fit). A node is graded for many sizes, most of them asking one of
    a few parts of a device (`phalanx.core.placement.node_choice._taken`)."""


@dataclass(frozen=True, slots=True)
class LevelBest:
    """The domain of a level that can take the most pods of a shape."""

    generation: int
    domain: int
    count: int


class CycleState(DeviceRooms):
    """`avoid_level`: SchedulerConfig.avoid_not_ready_level, for the pods that ask
    (Constraints.avoid_not_ready_in)."""

    def __init__(self, index: ClusterIndex, avoid_level: str | None = None) -> None:
        self.index = index
        self.avoid_level = avoid_level
        self.free: list[dict[str, int]] = list(index.free)
        self.pods_free: list[int] = list(index.pods_free)
        self.held: list[int] = [0] * len(index.nodes)
        self.generation = 0
        """Names the state's content: every cache that holds for one state keeps the
        generation it was made at. A placement or removal makes a new one; holds only
        add up per node, so the same holds on the same placements give back the same
        generation (`hold`)."""
        self._generations: dict[tuple[int, frozenset[tuple[int, int]]], int] = {
            (0, frozenset()): 0
        }
        self._base = 0  # the generation of the last placement or removal
        self._holds_since: dict[int, int] = {}  # per node, holds added since (< 0: lifted)
        self._last = 0  # the last generation made
        self._owned: set[int] = set()
        self._static: dict[Constraints, list[Exclusion | None]] = {}
        self._shapes: dict[Shape, ShapeCounts] = {}
        self._trees: dict[str | None, DomainTree] = {}
        self._best: dict[tuple[Shape, str | None, int], LevelBest] = {}
        self.static_rooms: dict[tuple[Shape, str | None], list[int]] = {}
        self.static_node_counts: dict[Shape, list[int]] = {}
        self.static_scans: dict[Shape, list[int]] = {}  # `static_takes`: [next node, total]
        self.rejections: dict[object, tuple[int, Problem]] = {}
        self.sentences: dict[object, tuple[int, str]] = {}
        self.changed: list[int] = []
        """Every node a placement, removal or hold changed, in order: a count over many
        nodes is kept current from the nodes changed since it was made (`explain`)."""
        self.kept: dict[object, object] = {}
        """Such counts, by what they count (their owner checks their type)."""
        self._open: dict[Constraints, OpenNodes] = {}
        self._nowhere: dict[Constraints, tuple[int, list[Shape]]] = {}
        """Parts of wait messages by what they depend on, with the generation they hold for."""
        self._columns: dict[str, list[int]] = {}
        self._used: dict[int, list[int]] = {}
        self.shares: dict[PodKey, tuple[DeviceShare, ...]] = {}
        self._released: dict[PodKey, tuple[int, tuple[DeviceShare, ...]]] = {}
        self._shared: set[int] = set(index.shared_nodes)
        self._spare: dict[int, int] = {}
        self._slot_counts: dict[int, tuple[tuple[int, ...], dict[int, int]]] = {}
        self._listed: list[int] = []
        """Every node whose devices the state listed or moved, in order (`_rooms`)."""
        self._rooms_of: dict[int, _Rooms] = {}
        self._grades: dict[int, NodeGrades] = {}
        self._grades_version = -1
        self._grade_ids: dict[tuple[tuple[tuple[str, int], ...], int, int], int] = {}

    @cached_property
    def mix(self) -> ShapeMix:
        """The workload's typical GPU pod shapes, learned from the snapshot's pods (the
        ones running and the ones waiting) when first asked (then a plain attribute: it
        is read for every candidate node); `ShapeMix.observe` adds arrivals to a state
        kept across them (the packing benchmark)."""
        return ShapeMix(self.index.pods)

    def node_grades(self, version: int) -> dict[int, NodeGrades]:
        """`least_fragmenting`'s grades of each node it was asked about, kept until a
        pod lands on or leaves the node or the typical shapes (`version`,
        `ShapeMix.version`) change: between two pods one node changes, and most of the
        next pod's candidates are the same nodes graded for the same size."""
        if version != self._grades_version:
            self._grades = {}
            self._grades_version = version
        return self._grades

    def grade_id(self, shape: Shape) -> int:
        """A small number per pod size (requests and part of a GPU; a grade does not
        depend on the constraints, so shapes that differ only there share grades): the
        key of `node_grades`, cheaper to look up than the shape itself."""
        key = (shape.requests, shape.gpu_milli, shape.gpu_memory)
        return self._grade_ids.setdefault(key, len(self._grade_ids))

    def tree(self, topology: str | None) -> DomainTree:
        tree = self._trees.get(topology)
        if tree is None:
            tree = self._trees[topology] = self.index.tree(topology)
        return tree

    def static(self, constraints: Constraints) -> list[Exclusion | None]:
        """Per node, why it can never take such a pod (None: it can)."""
        causes = self._static.get(constraints)
        if causes is None and constraints.avoid_not_ready_in is not None:
            topology = constraints.avoid_not_ready_in
            causes = list(self.static(replace(constraints, avoid_not_ready_in=None)))
            if self.avoid_level is not None:
                near = nodes_near_not_ready(self.index, self.tree(topology), self.avoid_level)
                for i in near:
                    causes[i] = causes[i] or Exclusion.NEAR_NOT_READY
            self._static[constraints] = causes
        if causes is None:
            base = self.index.base_exclusions
            if constraints == NO_CONSTRAINTS:
                causes = list(base)
            else:
                nodes = self.index.nodes
                causes = [
                    cause if cause in _NODE_WIDE else static_exclusion(nodes[i], constraints)
                    for i, cause in enumerate(base)
                ]
            self._static[constraints] = causes
        return causes

    def open_nodes(self, constraints: Constraints) -> OpenNodes:
        """`OpenNodes` for these constraints now (kept until the next placement or hold)."""
        found = self._open.get(constraints)
        if found is None or found.generation != self.generation:
            static, held, pods_free = self.static(constraints), self.held, self.pods_free
            nodes = [i for i, cause in enumerate(static) if cause is None and not held[i]]
            excluded = Counter(cause for cause in static if cause is not None)
            found = self._open[constraints] = OpenNodes(
                generation=self.generation,
                nodes=nodes,
                excluded=excluded,
                held=sum(1 for i, cause in enumerate(static) if cause is None and held[i]),
                too_many_pods=sum(1 for i in nodes if pods_free[i] <= 0),
            )
        return found

    def shape(self, shape: Shape) -> ShapeCounts:
        counts = self._shapes.get(shape)
        if counts is None:
            static = self.static(shape.constraints)
            fits = fit_counts_of_columns(
                [self.column(name) for name, _ in shape.requests], self.pods_free,
                shape.requests,
            )
            node = [
                count if cause is None else 0 for count, cause in zip(fits, static, strict=True)
            ]
            milli = None
            if shape.gpu_milli:  # the same part of a device everywhere
                milli = [shape.gpu_milli] * len(node)
                node = self._within_slots(node, shape.gpu_milli)
            elif shape.fractional:
                milli = [part_of(0, shape.gpu_memory, n) for n in self.index.nodes]
                node = [min(c, self.slots(i, milli[i])) if c else 0 for i, c in enumerate(node)]
            counts = self._shapes[shape] = ShapeCounts(shape, static, node, milli)
        return counts

    def domain_counts(self, shape: Shape, topology: str | None) -> list[int]:
        """Pods of `shape` each domain of the topology can still take."""
        counts = self.shape(shape)
        aggregate = counts.domains.get(topology)
        if aggregate is None:
            aggregate = counts.domains[topology] = roll_up(self.tree(topology), counts.node)
        return aggregate

    def level_rooms(self, shape: Shape, topology: str | None, level: int) -> RoomIndex:
        """The domains of `level` (>= 0) by their room for `shape`."""
        counts = self.shape(shape)
        aggregate = self.domain_counts(shape, topology)
        indexes = counts.levels.get(topology)
        tree = self._trees[topology]
        if indexes is None:
            indexes = counts.levels[topology] = [None] * (len(tree.levels) + 1)
        rooms = indexes[level + 1]
        if rooms is None:
            rooms = indexes[level + 1] = RoomIndex(tree.by_level[level], aggregate)
        return rooms

    def leaf_rooms(self, shape: Shape, topology: str | None, leaf: int) -> RoomIndex:
        """The nodes of a leaf domain by their room for `shape`."""
        counts = self.shape(shape)
        rooms = counts.leaves.get((topology, leaf))
        if rooms is None:
            nodes = self.tree(topology).nodes_under[leaf]
            rooms = counts.leaves[(topology, leaf)] = RoomIndex(nodes, counts.node)
        return rooms

    def best_at_level(self, shape: Shape, topology: str | None, level: int) -> LevelBest:
        """The level's domain with the most room for `shape`, cached until a placement;
        the first in id order among equals."""
        key = (shape, topology, level)
        best = self._best.get(key)
        if best is None or best.generation != self.generation:
            tree = self.tree(topology)
            aggregate = self.domain_counts(shape, topology)
            if level < 0:
                chosen, most = 0, aggregate[0]
            else:
                found = self.level_rooms(shape, topology, level).most()
                domains = tree.by_level[level]
                if found is not None:
                    most, chosen = found
                else:
                    chosen, most = (domains[0], 0) if domains else (0, 0)
            best = self._best[key] = LevelBest(self.generation, chosen, max(most, 0))
        return best

    def most_at_level(self, shape: Shape, topology: str | None, level: int) -> int:
        """`best_at_level(...).count` without finding which domain it is."""
        if self.fits_nowhere(shape):
            return 0
        if self.domain_counts(shape, topology)[0] <= 0:
            self._nowhere_now(shape)
        if level < 0:
            return max(self.domain_counts(shape, topology)[0], 0)
        return self.level_rooms(shape, topology, level).most_room()

    def fits_nowhere(self, shape: Shape) -> bool:
        """No node takes a pod of `shape` now, known without counting: it asks at least as
        much of everything as a shape of the same constraints that no node took at this
        generation (a cluster full for many distinct waiting pods counts each once)."""
        if shape in self._shapes or shape.gpu_memory:
            return False
        known = self._nowhere.get(shape.constraints)
        if known is None or known[0] != self.generation:
            return False
        asked = dict(shape.requests)
        return any(
            other.fractional == shape.fractional
            and other.gpu_milli <= shape.gpu_milli
            and all(asked.get(name, 0) >= amount for name, amount in other.requests)
            for other in known[1]
        )

    def _nowhere_now(self, shape: Shape) -> None:
        if shape.gpu_memory:  # its part of a device differs from node to node
            return
        known = self._nowhere.get(shape.constraints)
        if known is None or known[0] != self.generation:
            known = self._nowhere[shape.constraints] = (self.generation, [])
        known[1].append(shape)

    def place(self, node: int, pod: PodInfo) -> None:
        self._change(node, pod, -1)

    def unplace(self, node: int, pod: PodInfo) -> None:
        self._change(node, pod, 1)

    def hold(self, node: int, sign: int = 1) -> None:
        """Keep every pod off the node (room held for another group); sign -1 lifts one
        hold. A held node's pod slots are pushed far below zero, so every fit count,
        aggregate and cache sees it as full without a separate check."""
        self.held[node] += sign
        self.pods_free[node] -= sign * HELD_PODS
        self._hold_generation(node, sign)
        self.changed.append(node)
        self._refresh_counts(node, shrinking=sign > 0)

    def _hold_generation(self, node: int, sign: int) -> None:
        """The generation of the placements since `_base` with these holds: lifting a
        hold and putting it back returns to the generation before, so caches made there
        hold again. Each group a reservation lets in by backfill opens and
        closes that hold around its placement; with a new generation each time, every
        failed gang of a late Alibaba cycle worked its wait message out anew (2,049
        node histograms instead of 315)."""
        since = self._holds_since
        count = since.get(node, 0) + sign
        if count:
            since[node] = count
        else:
            del since[node]
        key = (self._base, frozenset(since.items()))
        generation = self._generations.get(key)
        if generation is None:
            generation = self._generations[key] = self._new_generation()
        self.generation = generation

    def _new_generation(self) -> int:
        self._last += 1
        return self._last

    def _change(self, node: int, pod: PodInfo, sign: int) -> None:
        if node not in self._owned:
            self.free[node] = dict(self.free[node])
            self._owned.add(node)
        free = self.free[node]
        columns = self._columns
        for name, amount in pod.requests.items():
            free[name] = free.get(name, 0) + sign * amount
            column = columns.get(name)
            if column is not None:
                column[node] = free[name]
        if holds_gpus(pod):
            self._move_devices(node, pod, sign)
        self.pods_free[node] += sign
        self.generation = self._base = self._new_generation()
        self._holds_since = {}
        self.changed.append(node)
        self._grades.pop(node, None)
        self._refresh_counts(node, shrinking=sign < 0 and all(
            amount >= 0 for amount in pod.requests.values()))

    def _refresh_counts(self, node: int, shrinking: bool) -> None:
        """`shrinking`: the node only lost room, so shapes that fit no pod there still
        fit none and are skipped (most of them, on a busy cluster with many shapes)."""
        free, pods_free = self.free[node], self.pods_free[node]
        for counts in self._shapes.values():
            node_counts = counts.node
            old = node_counts[node]
            if (shrinking and not old) or counts.static[node] is not None:
                continue
            new = fit_count(free, pods_free, counts.shape.requests)
            if new and counts.milli is not None:
                room = self.slots(node, counts.milli[node])
                if room < new:
                    new = room
            if new != old:
                node_counts[node] = new
                self._moved(counts, node, old, new)

    def _moved(self, counts: ShapeCounts, node: int, old: int, new: int) -> None:
        """The node's count of a shape went from `old` to `new`: its leaf's room index
        and every ancestor's aggregate (and level room index) follow."""
        delta = new - old
        for (topology, leaf), rooms in counts.leaves.items():
            if self._trees[topology].node_leaf[node] == leaf:
                rooms.move(node, old, new)
        for topology, aggregate in counts.domains.items():
            ancestors = self._trees[topology].node_ancestors[node]
            indexes = counts.levels.get(topology)
            if indexes is None:
                for domain in ancestors:
                    aggregate[domain] += delta
                continue
            for position, domain in enumerate(ancestors):
                before = aggregate[domain]
                aggregate[domain] = before + delta
                level_rooms = indexes[position]
                if level_rooms is not None:
                    level_rooms.move(domain, before, before + delta)


def roll_up(tree: DomainTree, node_counts: list[int]) -> list[int]:
    """Per-domain sums of per-node counts: nodes into their finest domain, then each
    domain into its parent (ids are ordered coarse to fine, so one reverse pass)."""
    totals = [0] * tree.size
    leaf = tree.node_leaf
    for node, count in enumerate(node_counts):
        if count:
            totals[leaf[node]] += count
    parent = tree.parent
    for domain in range(tree.size - 1, 0, -1):
        count = totals[domain]
        if count:
            totals[parent[domain]] += count
    return totals
