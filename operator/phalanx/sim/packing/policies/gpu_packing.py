"""GPU Packing, the paper's baseline (`GpuPackingScore`, hkust-adsl/kubernetes-scheduler-simulator).

From high to low: a node whose partly used GPUs take the pod (100 - free tenths of those
GPUs, at least 50); a partly used node whose fully free GPUs the pod must take (50 - GPUs
taken, at least 33); an untouched node (33 - its GPUs). CPU-only pods score 0 everywhere.
Ties at random; devices chosen as the paper's baselines choose them.
"""

from __future__ import annotations

import numpy as np

from phalanx.sim.packing.nodes import PackCluster
from phalanx.sim.packing.policy import Placement, baseline_devices, pick_best
from phalanx.sim.packing.trace import DEVICE_MILLI, PackPod


class GpuPacking:
    name = "gpu-packing"

    def choose(self, cluster: PackCluster, pod: PackPod) -> Placement | None:
        nodes = np.flatnonzero(cluster.feasible(pod))
        if len(nodes) == 0:
            return None
        if pod.gpus == 0:
            node = pick_best(cluster, nodes, np.zeros(len(nodes)))
            return node, ()
        scores = np.array([self._score(cluster, int(n), pod) for n in nodes], dtype=np.int64)
        node = pick_best(cluster, nodes, scores)
        return node, baseline_devices(cluster, node, pod)

    @staticmethod
    def _score(cluster: PackCluster, node: int, pod: PackPod) -> int:
        free = [int(v) for v in cluster.dev_free[node, : cluster.gpus[node]]]
        whole = sum(1 for v in free if v == DEVICE_MILLI)
        if whole == len(free):
            return max(100 // 3 - whole, whole)
        used = [v for v in sorted(free) if v >= pod.gpu_milli][: pod.gpus]
        whole_used = sum(1 for v in used if v == DEVICE_MILLI)
        if whole_used:
            return max(100 // 2 - whole_used, 100 // 3)
        tenths = sum(v * 100 // DEVICE_MILLI for v in used)
        return max(100 - tenths // 10, 100 // 2)
