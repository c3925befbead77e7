"""GPU usage figures of a snapshot, for the gauges and for `kubectl phalanx topology`.

`free_unusable_whole_node` measures fragmentation: free GPUs on nodes that already run
something, which a job asking for whole nodes cannot use. Nodes that are not ready or are
cordoned offer no free GPUs at all; their GPUs still count as allocated if pods use them.
"""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.core.model import NodeInfo
from phalanx.core.names import GPU
from phalanx.core.snapshot import Snapshot

MILLI = 1000


@dataclass(frozen=True, slots=True)
class GpuUsage:
    """GPU counts (whole GPUs; fractional requests make them non-integral)."""

    allocated: float
    free: float
    free_unusable_whole_node: float
    fully_free_nodes: int
    gpu_nodes: int


def node_gpu_split(node: NodeInfo, free_milli: int) -> tuple[int, int]:
    """(allocated, free) GPU milli-units of one node, clamped to its capacity."""
    capacity = node.allocatable.get(GPU, 0)
    free = min(max(free_milli, 0), capacity)
    return capacity - free, free


def takes_pods(node: NodeInfo) -> bool:
    return node.ready and not node.unschedulable


def gpu_usage(snapshot: Snapshot) -> GpuUsage:
    index = snapshot.index
    allocated = free = unusable = 0
    fully_free = gpu_nodes = 0
    for node, node_free in zip(index.nodes, index.free, strict=True):
        if node.allocatable.get(GPU, 0) <= 0:
            continue
        gpu_nodes += 1
        used, idle = node_gpu_split(node, node_free.get(GPU, 0))
        allocated += used
        if not takes_pods(node):
            continue
        free += idle
        if used > 0:
            unusable += idle
        else:
            fully_free += 1
    return GpuUsage(
        allocated=allocated / MILLI,
        free=free / MILLI,
        free_unusable_whole_node=unusable / MILLI,
        fully_free_nodes=fully_free,
        gpu_nodes=gpu_nodes,
    )
