"""One packing run: pods arrive one by one and never leave; what got allocated.

The figure of merit is the paper's: allocated GPU milli / cluster GPU milli at the moment
the arrived GPU requests reach 130% of the cluster's GPU milli, taken as the paper's
analysis takes it (the mean of the allocation, in % rounded to 2 decimals, over every
arrival whose arrived demand rounds to 130%).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from phalanx.sim.packing.nodes import PackCluster, PackNode
from phalanx.sim.packing.policy import PackingPolicy
from phalanx.sim.packing.trace import DEVICE_MILLI, PackPod


@dataclass(slots=True)
class PackingResult:
    policy: str
    seed: int
    pods: int
    placed: int
    arrived_gpu_milli: int
    allocated_gpu_milli: int
    total_gpu_milli: int
    allocation_at: dict[int, float] = field(default_factory=dict)
    """Arrived demand (% of the cluster's GPU milli, rounded) -> allocation % (the paper's
    per-bucket mean)."""
    failed_by_kind: dict[str, int] = field(default_factory=dict)
    fully_free_8gpu_nodes: int = 0
    stranded_gpu_milli: int = 0
    """Free GPU milli on nodes whose cpu or memory left is below what any GPU pod shape of
    the trace needs (no GPU pod of the trace can use them any more)."""
    seconds: float = 0.0
    choose_seconds: float = 0.0

    @property
    def allocation(self) -> float:
        """Allocated GPU milli / total GPU milli at the end, in %."""
        return 100.0 * self.allocated_gpu_milli / self.total_gpu_milli

    def allocation_at_demand(self, percent: int = 130) -> float:
        """The paper's figure at `percent` arrived demand (neighbouring buckets if empty)."""
        if percent in self.allocation_at:
            return self.allocation_at[percent]
        at = self.allocation_at
        near = [at[p] for p in (percent - 1, percent + 1) if p in at]
        return sum(near) / len(near) if near else self.allocation


def kind_of(pod: PackPod) -> str:
    if pod.gpus == 0:
        return "cpu-only"
    if pod.fractional:
        return "fractional"
    return f"{pod.gpus}-gpu"


def run_packing(
    policy: PackingPolicy,
    nodes: Sequence[PackNode],
    sequence: Sequence[PackPod],
    seed: int,
    random_ties: bool = False,
) -> PackingResult:
    """Offer every pod of `sequence` once, in order; `seed` orders the nodes for ties (or,
    with `random_ties`, draws among tied nodes for each pod)."""
    started = time.perf_counter()
    order = list(range(len(nodes)))
    rng = random.Random(seed)
    rng.shuffle(order)
    cluster = PackCluster(nodes, tie_order=order, tie_rng=rng if random_ties else None)
    buckets: dict[int, list[float]] = {}
    failed: dict[str, int] = {}
    arrived = placed = 0
    choosing = 0.0
    for pod in sequence:
        arrived += pod.total_gpu_milli
        t0 = time.perf_counter()
        where = policy.choose(cluster, pod)
        choosing += time.perf_counter() - t0
        if where is None:
            failed[kind_of(pod)] = failed.get(kind_of(pod), 0) + 1
        else:
            cluster.place(where[0], pod, where[1])
            placed += 1
        bucket = round(100.0 * arrived / cluster.total_gpu_milli)
        alloc = round(100.0 * cluster.allocated_gpu_milli / cluster.total_gpu_milli, 2)
        buckets.setdefault(bucket, []).append(alloc)
    return PackingResult(
        policy=policy.name,
        seed=seed,
        pods=len(sequence),
        placed=placed,
        arrived_gpu_milli=arrived,
        allocated_gpu_milli=cluster.allocated_gpu_milli,
        total_gpu_milli=cluster.total_gpu_milli,
        allocation_at={b: round(sum(v) / len(v), 2) for b, v in sorted(buckets.items())},
        failed_by_kind=dict(sorted(failed.items())),
        fully_free_8gpu_nodes=cluster.fully_free_nodes(8),
        stranded_gpu_milli=stranded_gpu_milli(cluster, sequence),
        seconds=time.perf_counter() - started,
        choose_seconds=choosing,
    )


def stranded_gpu_milli(cluster: PackCluster, pods: Sequence[PackPod]) -> int:
    """Free GPU milli left where no GPU pod of the workload fits by cpu and memory alone."""
    gpu_pods = {(p.cpu_milli, p.memory_mib) for p in pods if p.gpus}
    if not gpu_pods:
        return 0
    shapes = np.array(sorted(gpu_pods), dtype=np.int64)
    fits_any = (
        (cluster.cpu_free[:, None] >= shapes[None, :, 0])
        & (cluster.mem_free[:, None] >= shapes[None, :, 1])
    ).any(axis=1)
    free = np.where(cluster.dev_free > 0, cluster.dev_free, 0).sum(axis=1)
    return int(free[~fits_any].sum())


__all__ = ["DEVICE_MILLI", "PackingResult", "kind_of", "run_packing"]
