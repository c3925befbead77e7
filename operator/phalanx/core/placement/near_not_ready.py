"""New gangs keep out of a domain that holds a NotReady node (opt-in).

A node that stopped reporting often takes its neighbours with it (a rack's switch or power
feed), and a gang placed next to it may lose a member minutes later. With
`SchedulerConfig.avoid_not_ready_level` set to a level name L, a gang none of whose pods is
on a node yet does not use any node that shares its L domain with a NotReady node, in the
NetworkTopology the gang is placed in; the nodes are counted as "in a domain with a
NotReady node" when it waits. Gangs already running are not held back: their replacement
pods join the rest of the gang, which may be in that very domain. A topology without a
level L (and a gang with no topology) avoids nothing. Pure.
"""

from __future__ import annotations

from dataclasses import replace

from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.snapshot.shapes import Shape
from phalanx.topology.tree import DomainTree


def avoiding(shapes: tuple[Shape, ...], topology: str) -> tuple[Shape, ...]:
    """The shapes of a new gang's pods, marked to avoid the NotReady nodes' domains of
    `topology` (alike shapes stay one shape: they share the per-cycle counts)."""
    marked: dict[Shape, Shape] = {}
    for shape in shapes:
        if shape not in marked:
            constraints = replace(shape.constraints, avoid_not_ready_in=topology)
            marked[shape] = replace(shape, constraints=constraints)
    return tuple(marked[shape] for shape in shapes)


def nodes_near_not_ready(index: ClusterIndex, tree: DomainTree, level: str) -> frozenset[int]:
    """Every node sharing its `level` domain of `tree` with a NotReady node (the NotReady
    nodes included); none when the tree has no such level."""
    if level not in tree.levels:
        return frozenset()
    depth = tree.levels.index(level) + 1  # node_ancestors starts with the root
    near: set[int] = set()
    for i, node in enumerate(index.nodes):
        if not node.ready:
            near.update(tree.nodes_in(tree.node_ancestors[i][depth]))
    return frozenset(near)
