"""GPU usage figures of a snapshot, for the gauges and for `kubectl phalanx topology`.

`free_unusable_whole_node` measures fragmentation: free GPUs on nodes that already run
something, which a job asking for whole nodes cannot use. Nodes that are not ready or are
cordoned offer no free GPUs at all; their GPUs still count as allocated if pods use them
(`phalanx.core.snapshot.gpus`, the one definition). Fractions are kept here: the gauges add up
milli-GPUs, where the topology counts whole free GPUs per node: the free parts of GPUs
that fractional pods share count here as free (on a partly busy node).
"""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.core.model.names import GPU
from phalanx.core.snapshot.gpus import MILLI, gpus_at, takes_pods
from phalanx.core.snapshot.picture import Snapshot


@dataclass(frozen=True, slots=True)
class GpuUsage:
    """GPU counts (whole GPUs; fractional requests make them non-integral)."""

    allocated: float
    free: float
    free_unusable_whole_node: float
    fully_free_nodes: int
    gpu_nodes: int


def gpu_usage(snapshot: Snapshot) -> GpuUsage:
    index = snapshot.index
    allocated = free = unusable = 0
    fully_free = gpu_nodes = 0
    for position, node in enumerate(index.nodes):
        if node.allocatable.get(GPU, 0) <= 0:
            continue
        gpu_nodes += 1
        counts = gpus_at(index, position)
        allocated += counts.used
        if not takes_pods(node):
            continue
        idle = counts.free + counts.fragment_free
        free += idle
        if counts.used > 0:
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
