"""The trace's nodes and their free capacity, device by device.

`PackCluster` keeps arrays indexed like its node list, so a policy scores every
node with one vectorised expression: free cpu and memory, and for each device
the GPU milli still free (devices a node does not have count as 0 free, so no
pod ever fits on them).
"""

from __future__ import annotations

import csv
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from phalanx.sim.packing.trace import DEVICE_MILLI, PackPod
from phalanx.sim.paths import resolve

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class PackNode:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str = ""


def read_nodes(path: str | Path) -> list[PackNode]:
    """The nodes of an `openb_node_list_*.csv` file (columns sn,cpu_milli,memory_mib,gpu,model)."""
    with resolve(path).open(newline="") as handle:
        return [
            PackNode(
                name=row["sn"],
                cpu_milli=int(row["cpu_milli"]),
                memory_mib=int(row["memory_mib"]),
                gpus=int(row["gpu"]),
                model=row.get("model") or "",
            )
            for row in csv.DictReader(handle)
        ]


class CapacityError(RuntimeError):
    """A policy chose a node or devices where the pod does not fit."""


class PackCluster:
    """Free capacity of every node; `place` is the only mutation."""

    def __init__(
        self,
        nodes: Sequence[PackNode],
        tie_order: Sequence[int] = (),
        tie_rng: random.Random | None = None,
    ) -> None:
        self.nodes = tuple(nodes)
        self.tie_rng = tie_rng
        """If set, ties go to a node drawn at random for each pod instead (kube-scheduler's
        own `selectHost`), to show what the paper's fixed order changes."""
        self.tie_rank: IntArray = np.array(
            list(tie_order) or range(len(nodes)), dtype=np.int64
        )
        """Position of each node in the order that breaks score ties (lower first)."""
        width = max((n.gpus for n in nodes), default=0)
        self.gpus: IntArray = np.array([n.gpus for n in nodes], dtype=np.int64)
        self.cpu_cap: IntArray = np.array([n.cpu_milli for n in nodes], dtype=np.int64)
        self.mem_cap: IntArray = np.array([n.memory_mib for n in nodes], dtype=np.int64)
        self.cpu_free = self.cpu_cap.copy()
        self.mem_free = self.mem_cap.copy()
        self.dev_free: IntArray = np.zeros((len(nodes), max(width, 1)), dtype=np.int64)
        for i, node in enumerate(nodes):
            self.dev_free[i, : node.gpus] = DEVICE_MILLI
        self.models = tuple(sorted({n.model for n in nodes}))
        self.model_of: IntArray = np.array(
            [self.models.index(n.model) for n in nodes], dtype=np.int64
        )
        self.total_gpu_milli = int(self.gpus.sum()) * DEVICE_MILLI
        self.allocated_gpu_milli = 0
        self._allowed: dict[tuple[str, ...], BoolArray] = {}

    def allowed(self, models: tuple[str, ...]) -> BoolArray:
        """Nodes whose GPU model the pod accepts (all nodes if it names none)."""
        if models not in self._allowed:
            ok = np.array([m in models for m in self.models], dtype=np.bool_)
            self._allowed[models] = ok[self.model_of] if models else np.ones(
                len(self.nodes), dtype=np.bool_
            )
        return self._allowed[models]

    def full_devices(self) -> IntArray:
        """Fully free devices per node."""
        full: IntArray = np.count_nonzero(self.dev_free == DEVICE_MILLI, axis=1).astype(np.int64)
        return full

    def feasible(self, pod: PackPod) -> BoolArray:
        """Nodes where the pod fits: cpu, memory, GPU model and devices."""
        ok = (self.cpu_free >= pod.cpu_milli) & (self.mem_free >= pod.memory_mib)
        if pod.gpus == 0:
            return ok
        ok &= self.allowed(pod.models)
        if pod.fractional:
            room: BoolArray = ok & np.any(self.dev_free >= pod.gpu_milli, axis=1)
            return room
        return ok & (self.full_devices() >= pod.gpus)

    def fits(self, node: int, pod: PackPod, devices: Sequence[int]) -> bool:
        if self.cpu_free[node] < pod.cpu_milli or self.mem_free[node] < pod.memory_mib:
            return False
        if pod.gpus and not self.allowed(pod.models)[node]:
            return False
        if len(devices) != pod.gpus or len(set(devices)) != len(devices):
            return False
        return all(
            0 <= d < self.gpus[node] and self.dev_free[node, d] >= pod.gpu_milli for d in devices
        )

    def place(self, node: int, pod: PackPod, devices: Sequence[int]) -> None:
        if not self.fits(node, pod, devices):
            raise CapacityError(
                f"{pod.name} ({pod.gpus} x {pod.gpu_milli}m GPU, {pod.cpu_milli}m cpu, "
                f"{pod.memory_mib}Mi) does not fit on {self.nodes[node].name} devices {devices}"
            )
        self.cpu_free[node] -= pod.cpu_milli
        self.mem_free[node] -= pod.memory_mib
        for d in devices:
            self.dev_free[node, d] -= pod.gpu_milli
        self.allocated_gpu_milli += pod.total_gpu_milli

    def fully_free_nodes(self, gpus: int = 8) -> int:
        """Nodes with `gpus` GPUs, every one of them untouched (room for an 8-GPU pod)."""
        whole = self.full_devices() == self.gpus
        return int(np.count_nonzero(whole & (self.gpus == gpus)))

    def first_full_devices(self, node: int, count: int) -> tuple[int, ...]:
        """The `count` lowest-indexed fully free devices of a node (whole-GPU pods)."""
        free = np.flatnonzero(self.dev_free[node, : self.gpus[node]] == DEVICE_MILLI)
        return tuple(int(d) for d in free[:count])
