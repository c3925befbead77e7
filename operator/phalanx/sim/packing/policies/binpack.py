"""gang-binpack: Volcano's `gang` + `binpack` plugins (the simulator's `gang-binpack`).

Every pod of the trace is a gang of one, so `gang` adds nothing; `binpack` scores a node by
the share of each requested resource (cpu, memory, GPU) that would be allocated after
placing the pod, weight 1 each, averaged over the resources the pod requests; the highest
score wins, ties at random. GPU shares are counted in milli, so a fractional pod fills the
node by its fraction; its device is the best-fitting one.
"""

from __future__ import annotations

import numpy as np

from phalanx.sim.packing.nodes import PackCluster
from phalanx.sim.packing.policy import Placement, baseline_devices, pick_best
from phalanx.sim.packing.trace import DEVICE_MILLI, PackPod


class GangBinpack:
    name = "gang-binpack"

    def choose(self, cluster: PackCluster, pod: PackPod) -> Placement | None:
        nodes = np.flatnonzero(cluster.feasible(pod))
        if len(nodes) == 0:
            return None
        score = np.zeros(len(nodes))
        weights = 0
        for request, free, cap in (
            (pod.cpu_milli, cluster.cpu_free[nodes], cluster.cpu_cap[nodes]),
            (pod.memory_mib, cluster.mem_free[nodes], cluster.mem_cap[nodes]),
            (
                pod.total_gpu_milli,
                cluster.dev_free[nodes].sum(axis=1),
                cluster.gpus[nodes] * DEVICE_MILLI,
            ),
        ):
            if request <= 0:
                continue
            score += (cap - free + request) / np.maximum(cap, 1)
            weights += 1
        node = pick_best(cluster, nodes, score / max(weights, 1))
        return node, baseline_devices(cluster, node, pod)
