"""Mutable free capacity of the simulated nodes (the engine's bookkeeping).

Arrays indexed like `SimCluster.nodes`, so policies can score every node with
one vectorised expression.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from phalanx.sim.model import SimCluster

IntArray = npt.NDArray[np.int64]


class CapacityError(RuntimeError):
    """A policy asked to place a pod where it does not fit."""


class ClusterState:
    def __init__(self, cluster: SimCluster) -> None:
        self.cluster = cluster
        self.gpu_cap: IntArray = np.array([n.gpus for n in cluster.nodes], dtype=np.int64)
        self.cpu_cap: IntArray = np.array([n.cpu_milli for n in cluster.nodes], dtype=np.int64)
        self.mem_cap: IntArray = np.array([n.memory_mib for n in cluster.nodes], dtype=np.int64)
        self.gpu_free = self.gpu_cap.copy()
        self.cpu_free = self.cpu_cap.copy()
        self.mem_free = self.mem_cap.copy()
        self.pods = np.zeros(len(cluster.nodes), dtype=np.int64)
        self.total_gpus = int(self.gpu_cap.sum())

    def copy(self) -> ClusterState:
        """Independent free capacity over the same (shared, read-only) capacities."""
        other = ClusterState.__new__(ClusterState)
        other.cluster, other.total_gpus = self.cluster, self.total_gpus
        other.gpu_cap, other.cpu_cap, other.mem_cap = self.gpu_cap, self.cpu_cap, self.mem_cap
        other.gpu_free = self.gpu_free.copy()
        other.cpu_free = self.cpu_free.copy()
        other.mem_free = self.mem_free.copy()
        other.pods = self.pods.copy()
        return other

    def fits(self, node: int, gpus: int, cpu: int, mem: int) -> bool:
        return bool(
            self.gpu_free[node] >= gpus
            and self.cpu_free[node] >= cpu
            and self.mem_free[node] >= mem
        )

    def bind(self, node: int, gpus: int, cpu: int, mem: int) -> None:
        if not self.fits(node, gpus, cpu, mem):
            raise CapacityError(
                f"pod ({gpus} gpu, {cpu}m cpu, {mem}Mi) does not fit on "
                f"{self.cluster.nodes[node].name}"
            )
        self.gpu_free[node] -= gpus
        self.cpu_free[node] -= cpu
        self.mem_free[node] -= mem
        self.pods[node] += 1

    def release(self, node: int, gpus: int, cpu: int, mem: int) -> None:
        self.gpu_free[node] += gpus
        self.cpu_free[node] += cpu
        self.mem_free[node] += mem
        self.pods[node] -= 1
        if self.gpu_free[node] > self.gpu_cap[node] or self.pods[node] < 0:
            raise CapacityError(f"released more than was bound on {self.cluster.nodes[node].name}")

    @property
    def free_gpus(self) -> int:
        return int(self.gpu_free.sum())

    @property
    def allocated_gpus(self) -> int:
        return self.total_gpus - self.free_gpus

    def fully_free_gpu_nodes(self) -> int:
        """GPU nodes with every GPU free (the ones a whole-node pod can still use)."""
        return int(np.count_nonzero((self.gpu_free == self.gpu_cap) & (self.gpu_cap > 0)))
