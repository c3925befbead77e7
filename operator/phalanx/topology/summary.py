"""The domain tree of a topology with node and GPU counts, for NetworkTopology status
and `kubectl phalanx topology`."""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.core.names import GPU
from phalanx.core.snapshot import Snapshot
from phalanx.topology.tree import ROOT


@dataclass(frozen=True, slots=True)
class DomainSummary:
    """One domain. `name` is its path ("block-1/rack-3"); `label` the level's label value.

    `free_gpus` counts only nodes that take pods (Ready, not cordoned); GPUs are whole.
    """

    level: str
    name: str
    label: str
    parent: str | None
    nodes: int
    gpus: int
    free_gpus: int


@dataclass(frozen=True, slots=True)
class TopologySummary:
    topology: str
    levels: int
    domains: int
    nodes: int
    tree: tuple[DomainSummary, ...]


def summarize_topology(snapshot: Snapshot, topology: str) -> TopologySummary:
    """Raises KeyError if the snapshot has no NetworkTopology of that name."""
    index = snapshot.index
    tree = index.tree(topology)
    nodes = [0] * tree.size
    gpus = [0] * tree.size
    free = [0] * tree.size
    for i, node in enumerate(index.nodes):
        total = node.allocatable.get(GPU, 0)
        usable = node.ready and not node.unschedulable
        spare = max(0, index.free[i].get(GPU, 0)) if usable else 0
        for domain in tree.node_ancestors[i]:
            nodes[domain] += 1
            gpus[domain] += total
            free[domain] += spare
    rows = tuple(
        DomainSummary(
            level=tree.levels[tree.level_of[d]],
            name=tree.name(d),
            label=tree.path[d][-1],
            parent=tree.name(tree.parent[d]) if tree.parent[d] != ROOT else None,
            nodes=nodes[d],
            gpus=gpus[d] // 1000,
            free_gpus=free[d] // 1000,
        )
        for level in tree.by_level
        for d in level
    )
    return TopologySummary(topology, len(tree.levels), len(rows), len(index.nodes), rows)
