"""What a packing policy is: given the free capacity and one pod, a node and its devices."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from phalanx.sim.packing.nodes import IntArray, PackCluster
from phalanx.sim.packing.trace import DEVICE_MILLI, PackPod

Placement = tuple[int, tuple[int, ...]]
"""(node index, device indices); CPU-only pods take no device."""


class PackingPolicy(Protocol):
    name: str

    def choose(self, cluster: PackCluster, pod: PackPod) -> Placement | None:
        """Where the pod goes, or None if it fits nowhere (it then stays unplaced for good)."""
        ...


def pick_best(
    cluster: PackCluster, nodes: IntArray, scores: npt.NDArray[np.float64] | IntArray
) -> int:
    """The node of the highest score; among ties the first in the run's tie order.

    The paper's simulator breaks ties by the smallest node name, after prefixing every
    name with a seeded random permutation: a fixed random order of the nodes per seed
    (its `selectHost` and `syncClusterResourceList`). `PackCluster.tie_rank` is that order.
    """
    best = nodes[scores == scores.max()]
    if len(best) == 1:
        return int(best[0])
    if cluster.tie_rng is not None:
        return int(best[cluster.tie_rng.randrange(len(best))])
    return int(best[np.argmin(cluster.tie_rank[best])])


def best_fit_device(free: IntArray, milli: int) -> int:
    """The device with the least free milli that still takes `milli` (lowest index on ties):
    the GPU choice of the paper's baselines (Open-Gpu-Share `best`)."""
    room = np.where(free >= milli, free, DEVICE_MILLI + 1)
    return int(np.argmin(room))


def baseline_devices(cluster: PackCluster, node: int, pod: PackPod) -> tuple[int, ...]:
    """Devices as the paper's baselines pick them: best fit for a fractional pod, the
    lowest-indexed fully free devices for whole GPUs."""
    if pod.gpus == 0:
        return ()
    if pod.fractional:
        return (best_fit_device(cluster.dev_free[node, : cluster.gpus[node]], pod.gpu_milli),)
    return cluster.first_full_devices(node, pod.gpus)
