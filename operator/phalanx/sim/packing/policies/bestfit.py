"""BestFit, the paper's baseline (`BestFitScore` of hkust-adsl/kubernetes-scheduler-simulator).

Node score: 100 x (1 - [0.5 (free cpu - request) / 128 cores + 0.5 (free GPU milli -
request) / 8 GPUs]), truncated to an integer as the scheduler framework's int64 score
is; the highest score wins, ties at random (kube-scheduler's `selectHost`). Min-max
normalisation of the scores keeps the same top set, so it is left out. Memory counts only
as a filter (NodeResourcesFit), GPU models as the Open-Gpu-Share filter does.
"""

from __future__ import annotations

import numpy as np

from phalanx.sim.packing.nodes import PackCluster
from phalanx.sim.packing.policy import Placement, baseline_devices, pick_best
from phalanx.sim.packing.trace import PackPod

MAX_SPEC_CPU = 128_000.0
MAX_SPEC_GPU = 8_000.0


class BestFit:
    name = "bestfit"

    def choose(self, cluster: PackCluster, pod: PackPod) -> Placement | None:
        nodes = np.flatnonzero(cluster.feasible(pod))
        if len(nodes) == 0:
            return None
        cpu_left = (cluster.cpu_free[nodes] - pod.cpu_milli) / MAX_SPEC_CPU * 0.5
        gpu_free = cluster.dev_free[nodes].sum(axis=1)
        gpu_left = (gpu_free - pod.total_gpu_milli) / MAX_SPEC_GPU * 0.5
        scores = np.trunc((1.0 - (0.0 + cpu_left + gpu_left)) * 100.0)
        node = pick_best(cluster, nodes, scores)
        return node, baseline_devices(cluster, node, pod)
