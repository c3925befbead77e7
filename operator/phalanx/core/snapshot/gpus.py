"""GPU counts of a snapshot: the one definition of "free GPUs", per node and per domain.

A node offers its idle GPUs only if it takes pods (Ready and not cordoned), exactly what
placement sees; its GPUs still count as used while pods hold them. A GPU is free only if
nothing holds any of it: a device that fractional pods share is "fragmented", its free
part usable by other fractional pods but by no whole-GPU pod (`phalanx.core.snapshot.devices`).
A domain's free GPUs are its nodes' whole free GPUs added up (half a GPU free on each of
two nodes is not one free GPU). The NetworkTopology status, `kubectl phalanx topology`,
`explain` and the GPU gauges all read these, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from phalanx.core.model.device_share import DEVICE
from phalanx.core.model.inputs import NodeInfo
from phalanx.core.model.names import GPU
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.snapshot.picture import Snapshot

MILLI = DEVICE


def takes_pods(node: NodeInfo) -> bool:
    return node.ready and not node.unschedulable


@dataclass(frozen=True, slots=True)
class NodeGpus:
    """One node's GPUs in milli-units: `used` (held by pods) and `idle` add up to `total`
    (clamped); `free` is the whole free GPUs (x 1000) on a node that takes pods, else 0;
    `fragmented` counts the devices partly held by fractional pods, `fragment_free` the
    milli still free on them (on a node that takes pods, else 0)."""

    total: int
    used: int
    idle: int
    free: int
    fragmented: int = 0
    fragment_free: int = 0

    @property
    def whole_free(self) -> bool:
        """Every GPU free on a node that takes pods: what a whole-node job needs."""
        return self.free > 0 and self.used == 0


def node_gpus(node: NodeInfo, free_milli: int, devices: Sequence[int] | None = None) -> NodeGpus:
    """`free_milli`: the node's whole free GPUs in milli (the snapshot index's free);
    `devices`: milli held per device, for a node where fractional pods share devices."""
    total = node.allocatable.get(GPU, 0)
    whole = min(max(free_milli, 0), total)
    parts = [taken for taken in devices or () if 0 < taken < DEVICE]
    spare = sum(DEVICE - taken for taken in parts)
    idle = min(whole + spare, total)
    open_ = takes_pods(node)
    return NodeGpus(
        total, total - idle, idle, whole if open_ else 0, len(parts), spare if open_ else 0
    )


def gpus_at(index: ClusterIndex, position: int) -> NodeGpus:
    """`node_gpus` of the index's node at `position`."""
    devices = index.device_usage(position).used if position in index.shared_nodes else None
    return node_gpus(index.nodes[position], index.free[position].get(GPU, 0), devices)


@dataclass(frozen=True, slots=True)
class DomainGpus:
    """One topology domain: nodes, whole GPUs, whole free GPUs, whole-free nodes, and the
    devices fractional pods share (`fragmented`) with the milli still free on them."""

    nodes: int
    gpus: int
    free_gpus: int
    whole_free_nodes: int
    fragmented: int = 0
    fragment_free: int = 0


def domain_gpus(snapshot: Snapshot, topology: str) -> list[DomainGpus]:
    """Counts per domain id of the topology's tree (domain 0 is the whole cluster).
    Raises KeyError when the snapshot has no NetworkTopology of that name."""
    index = snapshot.index
    tree = index.tree(topology)
    nodes, gpus, free, whole, parts, spare = ([0] * tree.size for _ in range(6))
    for i in range(len(index.nodes)):
        counts = gpus_at(index, i)
        for domain in tree.node_ancestors[i]:
            nodes[domain] += 1
            gpus[domain] += counts.total // MILLI
            free[domain] += counts.free // MILLI
            whole[domain] += counts.whole_free
            parts[domain] += counts.fragmented
            spare[domain] += counts.fragment_free
    rows = zip(nodes, gpus, free, whole, parts, spare, strict=True)
    return [DomainGpus(*row) for row in rows]
