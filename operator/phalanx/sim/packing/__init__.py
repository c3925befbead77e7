"""Packing harness: the FGD paper's allocation benchmark, reproduced.

Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
Fragmentation Gradient Descent" (USENIX ATC'23) measure how much of a GPU
cluster a scheduler can fill: pods of the Alibaba 2023 trace arrive one by
one and never leave, until their GPU requests reach 130% of the cluster's GPU
capacity; the figure is the share of GPU milli allocated then. Fractional pods
(`gpu_milli` < 1000) share a device. This package runs that experiment on the
trace's own 1,213 nodes for several policies (`phalanx.sim.packing.policies`),
one pod at a time, with the same workload for every policy of a seed.
"""

from phalanx.sim.packing.nodes import PackCluster, PackNode, read_nodes
from phalanx.sim.packing.run import PackingResult, run_packing
from phalanx.sim.packing.trace import PackPod, arrivals, read_trace, whole_gpu_only

__all__ = [
    "PackCluster",
    "PackNode",
    "PackPod",
    "PackingResult",
    "arrivals",
    "read_nodes",
    "read_trace",
    "run_packing",
    "whole_gpu_only",
]
