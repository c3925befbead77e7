"""GPU counts of a snapshot: the one definition of "free GPUs", per node and per domain.

A node offers its idle GPUs only if it takes pods (Ready and not cordoned), exactly what
placement sees; its GPUs still count as used while pods hold them. A domain's free GPUs
are its nodes' whole free GPUs added up (half a GPU free on each of two nodes is not one
free GPU). The NetworkTopology status, `kubectl phalanx topology` and the GPU gauges all
read these, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.core.model import NodeInfo
from phalanx.core.names import GPU
from phalanx.core.snapshot import Snapshot

MILLI = 1000


def takes_pods(node: NodeInfo) -> bool:
    return node.ready and not node.unschedulable


@dataclass(frozen=True, slots=True)
class NodeGpus:
    """One node's GPUs in milli-units: `used` and `idle` add up to `total` (clamped);
    `free` is `idle` on a node that takes pods, else 0."""

    total: int
    used: int
    idle: int
    free: int

    @property
    def whole_free(self) -> bool:
        """Every GPU free on a node that takes pods: what a whole-node job needs."""
        return self.free > 0 and self.used == 0


def node_gpus(node: NodeInfo, free_milli: int) -> NodeGpus:
    """`free_milli`: the node's unrequested GPU milli-units (the snapshot index's free)."""
    total = node.allocatable.get(GPU, 0)
    idle = min(max(free_milli, 0), total)
    return NodeGpus(total, total - idle, idle, idle if takes_pods(node) else 0)


@dataclass(frozen=True, slots=True)
class DomainGpus:
    """One topology domain: nodes, whole GPUs, whole free GPUs, whole-free nodes."""

    nodes: int
    gpus: int
    free_gpus: int
    whole_free_nodes: int


def domain_gpus(snapshot: Snapshot, topology: str) -> list[DomainGpus]:
    """Counts per domain id of the topology's tree (domain 0 is the whole cluster).
    Raises KeyError when the snapshot has no NetworkTopology of that name."""
    index = snapshot.index
    tree = index.tree(topology)
    nodes, gpus, free, whole = ([0] * tree.size for _ in range(4))
    for i, node in enumerate(index.nodes):
        counts = node_gpus(node, index.free[i].get(GPU, 0))
        for domain in tree.node_ancestors[i]:
            nodes[domain] += 1
            gpus[domain] += counts.total // MILLI
            free[domain] += counts.free // MILLI
            whole[domain] += counts.whole_free
    return [DomainGpus(*row) for row in zip(nodes, gpus, free, whole, strict=True)]
