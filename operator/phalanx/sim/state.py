"""Mutable free capacity of the simulated nodes (the engine's bookkeeping).

Arrays indexed like `SimCluster.nodes`, so policies can score every node with
one vectorised expression. GPUs are devices, as in the core (`phalanx.core.snapshot.devices`):
`used[node, i]` is the milli of device i its pods hold. A pod's GPU ask is one number,
`milli`: k x 1000 for k whole GPUs, which take devices nothing holds; 1..999 for part of
one device, shared with other such pods; 0 for none. Rows are padded to the largest node
with devices that are always full, so nothing ever takes them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from phalanx.core.model.device_share import DEVICE
from phalanx.sim.model import SimCluster

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class CapacityError(RuntimeError):
    """A policy asked to place a pod where it does not fit."""


def device_ask(milli: int) -> tuple[int, int]:
    """(milli taken of each device, devices): (1000, k) for k whole GPUs, (m, 1) for a
    part of one, (0, 0) for none."""
    if milli >= DEVICE:
        return DEVICE, milli // DEVICE
    return (milli, 1) if milli > 0 else (0, 0)


def room_for(used: Sequence[int], milli: int) -> tuple[int, ...] | None:
    """The devices a pod asking `milli` takes on a node whose devices hold `used`: the
    first ones by index with room (whole GPUs: devices nothing holds); None: no room.
    First fit, as Kubernetes' DRA allocator takes the first device that satisfies a
    request (the kube-default model); the core chooses its own devices."""
    share, count = device_ask(milli)
    if not count:
        return ()
    limit = DEVICE - share
    chosen = tuple(i for i, taken in enumerate(used) if taken <= limit)[:count]
    return chosen if len(chosen) == count else None


class ClusterState:
    def __init__(self, cluster: SimCluster) -> None:
        self.cluster = cluster
        self.gpu_cap: IntArray = np.array([n.gpus for n in cluster.nodes], dtype=np.int64)
        self.cpu_cap: IntArray = np.array([n.cpu_milli for n in cluster.nodes], dtype=np.int64)
        self.mem_cap: IntArray = np.array([n.memory_mib for n in cluster.nodes], dtype=np.int64)
        width = max(int(self.gpu_cap.max(initial=0)), 1)
        pad = np.arange(width)[None, :] >= self.gpu_cap[:, None]
        self.used: IntArray = np.where(pad, DEVICE, 0).astype(np.int64)
        self.gpu_free = self.gpu_cap.copy()
        """Devices nothing holds, per node: what whole-GPU pods can use."""
        self.part_free: IntArray = np.where(self.gpu_cap > 0, DEVICE, 0).astype(np.int64)
        """The most milli free on one device, per node: what a fractional pod can use."""
        self.milli_free: IntArray = self.gpu_cap * DEVICE
        self.cpu_free = self.cpu_cap.copy()
        self.mem_free = self.mem_cap.copy()
        self.pods = np.zeros(len(cluster.nodes), dtype=np.int64)
        self.total_gpus = int(self.gpu_cap.sum())
        self.total_milli = self.total_gpus * DEVICE

    def copy(self) -> ClusterState:
        """Independent free capacity over the same (shared, read-only) capacities."""
        other = ClusterState.__new__(ClusterState)
        other.cluster, other.total_gpus = self.cluster, self.total_gpus
        other.total_milli = self.total_milli
        other.gpu_cap, other.cpu_cap, other.mem_cap = self.gpu_cap, self.cpu_cap, self.mem_cap
        other.used = self.used.copy()
        other.gpu_free = self.gpu_free.copy()
        other.part_free = self.part_free.copy()
        other.milli_free = self.milli_free.copy()
        other.cpu_free = self.cpu_free.copy()
        other.mem_free = self.mem_free.copy()
        other.pods = self.pods.copy()
        return other

    def fits(self, node: int, milli: int, cpu: int, mem: int) -> bool:
        rest = self.cpu_free[node] >= cpu and self.mem_free[node] >= mem
        return bool(rest and self._gpus_fit(node, milli))

    def _gpus_fit(self, node: int, milli: int) -> bool:
        share, count = device_ask(milli)
        if share == DEVICE:
            return bool(self.gpu_free[node] >= count)
        return bool(self.part_free[node] >= share)

    def fit_mask(self, milli: int, cpu: int, mem: int) -> BoolArray:
        """`fits` for every node at once."""
        share, count = device_ask(milli)
        gpus = self.gpu_free >= count if share == DEVICE else self.part_free >= share
        mask: BoolArray = gpus & (self.cpu_free >= cpu) & (self.mem_free >= mem)
        return mask

    def bind(
        self, node: int, milli: int, cpu: int, mem: int, devices: Sequence[int] | None = None
    ) -> tuple[int, ...]:
        """Take the pod's room on the node: on `devices` if given (checked), else on the
        first devices with room (`room_for`). Returns the devices taken."""
        chosen = self._devices(node, milli, devices)
        if chosen is None or not (self.cpu_free[node] >= cpu and self.mem_free[node] >= mem):
            raise CapacityError(
                f"pod ({milli} GPU milli on devices {devices}, {cpu}m cpu, {mem}Mi) does not "
                f"fit on {self.cluster.nodes[node].name}"
            )
        self._take(node, milli, chosen, 1)
        self.cpu_free[node] -= cpu
        self.mem_free[node] -= mem
        self.pods[node] += 1
        return chosen

    def _devices(
        self, node: int, milli: int, devices: Sequence[int] | None
    ) -> tuple[int, ...] | None:
        row = [int(v) for v in self.used[node]]
        if devices is None:
            return room_for(row, milli)
        share, count = device_ask(milli)
        chosen = tuple(sorted(devices))
        valid = len(set(chosen)) == len(chosen) == count and all(
            0 <= i < self.gpu_cap[node] and row[i] + share <= DEVICE for i in chosen
        )
        return chosen if valid else None

    def release(
        self, node: int, milli: int, cpu: int, mem: int, devices: Sequence[int] = ()
    ) -> None:
        name = self.cluster.nodes[node].name
        if len(devices) != device_ask(milli)[1]:
            raise CapacityError(f"release of {milli} GPU milli on {name} names devices {devices}")
        self._take(node, milli, devices, -1)
        self.cpu_free[node] += cpu
        self.mem_free[node] += mem
        self.pods[node] -= 1
        if (self.used[node] < 0).any() or self.pods[node] < 0:
            raise CapacityError(f"released more than was bound on {name}")

    def _take(self, node: int, milli: int, devices: Sequence[int], sign: int) -> None:
        share = device_ask(milli)[0]
        for index in devices:
            self.used[node, index] += sign * share
        row = self.used[node, : self.gpu_cap[node]]
        self.gpu_free[node] = int(np.count_nonzero(row == 0))
        self.milli_free[node] = int((DEVICE - row).sum())
        self.part_free[node] = DEVICE - int(row.min()) if row.size else 0

    @property
    def free_milli(self) -> int:
        return int(self.milli_free.sum())

    @property
    def allocated_milli(self) -> int:
        """GPU milli held by pods: the paper's measure (a 0.3-GPU pod counts 300)."""
        return self.total_milli - self.free_milli

    @property
    def allocated_gpus(self) -> float:
        return self.allocated_milli / DEVICE

    def fully_free_gpu_nodes(self) -> int:
        """GPU nodes with every GPU free (the ones a whole-node pod can still use)."""
        return int(np.count_nonzero((self.gpu_free == self.gpu_cap) & (self.gpu_cap > 0)))
