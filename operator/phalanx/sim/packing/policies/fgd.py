"""FGD, the paper's policy (`FGDScore` of hkust-adsl/kubernetes-scheduler-simulator).

A node's fragmentation, for the workload's typical pods (`phalanx.sim.packing.typical`),
is the expected GPU milli that a typical pod could not use there: for each typical shape,
all of the node's free GPU milli if the shape does not fit (too little cpu, too few
devices with room, a model it does not accept; CPU-only shapes count it all too), else the
free milli of the devices too small for it; weighted by the shapes' shares. A placement
scores int(100 x sigmoid((fragmentation before - after) / 1000)); a fractional pod takes
the device of the best score on its node (lowest index on ties), the node of the best
score wins, ties at random.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from phalanx.sim.packing.nodes import BoolArray, IntArray, PackCluster
from phalanx.sim.packing.policy import Placement, pick_best
from phalanx.sim.packing.trace import DEVICE_MILLI, PackPod
from phalanx.sim.packing.typical import Shape, typical_shapes

FloatArray = npt.NDArray[np.float64]


class Fgd:
    name = "fgd"

    def __init__(self, shapes: Sequence[tuple[Shape, float]]) -> None:
        self.shapes = tuple(s for s, _ in shapes)
        self.cpu: IntArray = np.array([s.cpu_milli for s in self.shapes], dtype=np.int64)
        self.count: IntArray = np.array([s.gpus for s in self.shapes], dtype=np.int64)
        self.share: FloatArray = np.array([f for _, f in shapes], dtype=np.float64)
        self.gpu_shape: BoolArray = np.array([s.gpu_milli > 0 for s in self.shapes], dtype=bool)
        millis = sorted({s.gpu_milli for s in self.shapes if s.gpu_milli > 0}) or [DEVICE_MILLI]
        self.millis: IntArray = np.array(millis, dtype=np.int64)
        self.milli_of: IntArray = np.array(
            [millis.index(s.gpu_milli) if s.gpu_milli > 0 else 0 for s in self.shapes],
            dtype=np.int64,
        )
        self._access: tuple[int, BoolArray] | None = None
        self._seen: tuple[IntArray, IntArray, FloatArray] | None = None

    @classmethod
    def from_trace(cls, pods: Sequence[PackPod]) -> Fgd:
        return cls(typical_shapes(pods))

    def access(self, cluster: PackCluster) -> BoolArray:
        """(node, shape): the node's GPU model is one the shape accepts."""
        if self._access is None or self._access[0] != id(cluster):
            cols = [cluster.allowed(s.models) for s in self.shapes]
            self._access = (id(cluster), np.stack(cols, axis=1))
        return self._access[1]

    def fragmentation(self, dev: IntArray, cpu: IntArray, access: BoolArray) -> FloatArray:
        """Expected unusable free GPU milli of each row (free milli per device, free cpu)."""
        total = dev.sum(axis=1)
        big = dev[:, :, None] >= self.millis
        count = big.sum(axis=1)[:, self.milli_of]
        small = (total[:, None] - (dev[:, :, None] * big).sum(axis=1))[:, self.milli_of]
        usable = (count >= self.count) & access & (cpu[:, None] >= self.cpu) & self.gpu_shape
        amount = np.where(usable, small, total[:, None])
        return np.asarray(amount @ self.share, dtype=np.float64)

    def current(self, cluster: PackCluster) -> FloatArray:
        """Every node's fragmentation now, recomputed only for nodes changed since last call."""
        dev, cpu = cluster.dev_free, cluster.cpu_free
        if self._seen is None or len(self._seen[2]) != len(cpu):
            whole = self.fragmentation(dev, cpu, self.access(cluster))
            self._seen = (dev.copy(), cpu.copy(), whole)
        seen_dev, seen_cpu, frag = self._seen
        changed = np.flatnonzero((dev != seen_dev).any(axis=1) | (cpu != seen_cpu))
        if len(changed):
            frag[changed] = self.fragmentation(
                dev[changed], cpu[changed], self.access(cluster)[changed]
            )
            seen_dev[changed], seen_cpu[changed] = dev[changed], cpu[changed]
        return frag

    def choose(self, cluster: PackCluster, pod: PackPod) -> Placement | None:
        nodes = np.flatnonzero(cluster.feasible(pod))
        if len(nodes) == 0:
            return None
        dev, cpu = cluster.dev_free[nodes], cluster.cpu_free[nodes]
        access = self.access(cluster)[nodes]
        before = self.current(cluster)[nodes]
        if pod.fractional:
            rows, devs = np.nonzero((dev >= pod.gpu_milli) & ~_repeated(dev))
            after_dev = dev[rows].copy()
            after_dev[np.arange(len(rows)), devs] -= pod.gpu_milli
            after = self.fragmentation(after_dev, cpu[rows] - pod.cpu_milli, access[rows])
            scores = _score(before[rows] - after)
            node_score = np.full(len(nodes), -1, dtype=np.int64)
            np.maximum.at(node_score, rows, scores)
            node = pick_best(cluster, nodes, node_score)
            at = int(np.searchsorted(nodes, node))
            mine = (rows == at) & (scores == node_score[at])
            return node, (int(devs[np.flatnonzero(mine)[0]]),)
        full = dev == DEVICE_MILLI
        take = full & (np.cumsum(full, axis=1) <= pod.gpus)
        after = self.fragmentation(dev - take * DEVICE_MILLI, cpu - pod.cpu_milli, access)
        node = pick_best(cluster, nodes, _score(before - after))
        return node, cluster.first_full_devices(node, pod.gpus)


def _repeated(dev: IntArray) -> BoolArray:
    """Devices whose free milli equals that of a lower-indexed device of the same node: the
    same candidate again (FGD keeps the lowest index among equal scores)."""
    width = dev.shape[1]
    earlier = np.tril(np.ones((width, width), dtype=np.bool_), k=-1)
    return np.asarray(((dev[:, :, None] == dev[:, None, :]) & earlier).any(axis=2))

def _score(gain: FloatArray) -> IntArray:
    """int(100 x sigmoid(gain / 1000)), the framework's int64 node score."""
    return np.trunc(100.0 / (1.0 + np.exp(-gain / 1000.0))).astype(np.int64)
