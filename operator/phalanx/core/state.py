"""Per-cycle mutable capacity: free resources per node, and for every pod shape in use
the number of such pods each node and each topology domain can still take.

Aggregates are built once per shape and tree, then updated along the node's ancestor
path when a pod is placed or removed, so "no domain can hold this gang" is answered
from the aggregates without scanning nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from phalanx.core.ids import PODS
from phalanx.core.model import PodInfo
from phalanx.core.predicates import Constraints, static_exclusion
from phalanx.core.shapes import Shape, fit_count
from phalanx.core.snapshot import UNLIMITED_PODS, ClusterIndex
from phalanx.core.status import Exclusion
from phalanx.topology.tree import DomainTree


@dataclass(slots=True)
class ShapeCounts:
    shape: Shape
    static: list[Exclusion | None]
    node: list[int]
    domains: dict[str | None, list[int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LevelBest:
    """The domain of a level that can take the most pods of a shape."""

    generation: int
    domain: int
    count: int


class CycleState:
    def __init__(self, index: ClusterIndex) -> None:
        self.index = index
        self.free: list[dict[str, int]] = list(index.free)
        self.pods_free: list[int] = list(index.pods_free)
        self.generation = 0
        self._owned: set[int] = set()
        self._static: dict[Constraints, list[Exclusion | None]] = {}
        self._shapes: dict[Shape, ShapeCounts] = {}
        self._trees: dict[str | None, DomainTree] = {}
        self._best: dict[tuple[Shape, str | None, int], LevelBest] = {}
        self.static_rooms: dict[tuple[Shape, str | None], list[int]] = {}

    def tree(self, topology: str | None) -> DomainTree:
        tree = self._trees.get(topology)
        if tree is None:
            tree = self._trees[topology] = self.index.tree(topology)
        return tree

    def static(self, constraints: Constraints) -> list[Exclusion | None]:
        """Per node, why it can never take such a pod (None: it can)."""
        causes = self._static.get(constraints)
        if causes is None:
            causes = [static_exclusion(node, constraints) for node in self.index.nodes]
            self._static[constraints] = causes
        return causes

    def shape(self, shape: Shape) -> ShapeCounts:
        counts = self._shapes.get(shape)
        if counts is None:
            static = self.static(shape.constraints)
            free, pods_free, requests = self.free, self.pods_free, shape.requests
            node = [
                fit_count(free[i], pods_free[i], requests) if cause is None else 0
                for i, cause in enumerate(static)
            ]
            counts = self._shapes[shape] = ShapeCounts(shape, static, node)
        return counts

    def domain_counts(self, shape: Shape, topology: str | None) -> list[int]:
        """Pods of `shape` each domain of the topology can still take."""
        counts = self.shape(shape)
        aggregate = counts.domains.get(topology)
        if aggregate is None:
            tree = self.tree(topology)
            aggregate = [0] * tree.size
            ancestors = tree.node_ancestors
            for i, count in enumerate(counts.node):
                if count:
                    for domain in ancestors[i]:
                        aggregate[domain] += count
            counts.domains[topology] = aggregate
        return aggregate

    def best_at_level(self, shape: Shape, topology: str | None, level: int) -> LevelBest:
        """The level's domain with the most room for `shape`, cached until a placement."""
        key = (shape, topology, level)
        best = self._best.get(key)
        if best is None or best.generation != self.generation:
            tree = self.tree(topology)
            aggregate = self.domain_counts(shape, topology)
            domains = tree.by_level[level] if level >= 0 else (0,)
            chosen, most = 0, -1
            for domain in domains:
                if aggregate[domain] > most:
                    chosen, most = domain, aggregate[domain]
            best = self._best[key] = LevelBest(self.generation, chosen, max(most, 0))
        return best

    def place(self, node: int, pod: PodInfo) -> None:
        self._change(node, pod, -1)

    def unplace(self, node: int, pod: PodInfo) -> None:
        self._change(node, pod, 1)

    def _change(self, node: int, pod: PodInfo, sign: int) -> None:
        if node not in self._owned:
            self.free[node] = dict(self.free[node])
            self._owned.add(node)
        free = self.free[node]
        for name, amount in pod.requests.items():
            free[name] = free.get(name, 0) + sign * amount
        self.pods_free[node] += sign
        self.generation += 1
        self._refresh_counts(node)

    def _refresh_counts(self, node: int) -> None:
        free, pods_free = self.free[node], self.pods_free[node]
        for counts in self._shapes.values():
            if counts.static[node] is not None:
                continue
            new = fit_count(free, pods_free, counts.shape.requests)
            delta = new - counts.node[node]
            if not delta:
                continue
            counts.node[node] = new
            for topology, aggregate in counts.domains.items():
                for domain in self._trees[topology].node_ancestors[node]:
                    aggregate[domain] += delta


def static_room(state: CycleState, shape: Shape, topology: str | None) -> list[int]:
    """Pods of `shape` each domain could take if every node were empty, ready and
    uncordoned: when even this is too small, waiting will not help."""
    cache = state.static_rooms
    key = (shape, topology)
    room = cache.get(key)
    if room is None:
        tree = state.tree(topology)
        room = [0] * tree.size
        static = state.static(shape.constraints)
        for i, node in enumerate(state.index.nodes):
            if static[i] not in (None, Exclusion.NOT_READY, Exclusion.CORDONED):
                continue
            pods = node.allocatable[PODS] // 1000 if PODS in node.allocatable else UNLIMITED_PODS
            count = fit_count(node.allocatable, pods, shape.requests)
            if count:
                for domain in tree.node_ancestors[i]:
                    room[domain] += count
        cache[key] = room
    return room
