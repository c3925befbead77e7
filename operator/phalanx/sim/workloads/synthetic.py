"""Seeded synthetic gang jobs: heavy-tailed sizes, Poisson arrivals, log-normal durations.

Most jobs take 1-8 GPUs on one node; a tail of 16-256-GPU jobs made of
whole-node pods holds most of the GPU-hours (with the default size mix,
about three quarters). The arrival rate is set so that the offered load,
E[GPUs x duration] x rate / cluster GPUs, equals `load`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.sim.model import JobSpec, SimCluster

DEFAULT_SIZES: Mapping[int, float] = {
    1: 0.40,
    2: 0.15,
    4: 0.15,
    8: 0.15,
    16: 0.06,
    32: 0.04,
    64: 0.03,
    128: 0.015,
    256: 0.005,
}


@dataclass(frozen=True, slots=True)
class SyntheticWorkload:
    jobs: int = 1000
    load: float = 0.9
    sizes: Mapping[int, float] = field(default_factory=lambda: dict(DEFAULT_SIZES))
    pod_gpus: int = 8
    """GPUs per pod of a multi-node job (one whole node)."""
    duration_median: float = 3600.0
    duration_sigma: float = 1.0
    duration_max: float = 7 * 24 * 3600.0
    cpu_share: float = 0.75
    """Each GPU comes with this share of its node's cpu per GPU (memory likewise)."""
    memory_share: float = 0.75
    max_job_share: float = 0.5
    """Sizes above this share of the cluster's GPUs are left out of the mix."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SyntheticWorkload:
        default = cls()
        sizes = data.get("sizes")
        return cls(
            jobs=int(data.get("jobs", default.jobs)),
            load=float(data.get("load", default.load)),
            sizes={int(k): float(v) for k, v in sizes.items()} if sizes else dict(default.sizes),
            pod_gpus=int(data.get("podGpus", default.pod_gpus)),
            duration_median=float(data.get("durationMedianSeconds", default.duration_median)),
            duration_sigma=float(data.get("durationSigma", default.duration_sigma)),
            duration_max=float(data.get("durationMaxSeconds", default.duration_max)),
            cpu_share=float(data.get("cpuShare", default.cpu_share)),
            memory_share=float(data.get("memoryShare", default.memory_share)),
            max_job_share=float(data.get("maxJobShare", default.max_job_share)),
        )


def size_mix(workload: SyntheticWorkload, cluster: SimCluster) -> dict[int, float]:
    """Normalised size weights, without sizes too large for the cluster or not node-shaped."""
    limit = workload.max_job_share * cluster.total_gpus
    mix = {
        size: weight
        for size, weight in workload.sizes.items()
        if size <= limit and (size <= workload.pod_gpus or size % workload.pod_gpus == 0)
    }
    total = sum(mix.values())
    if total <= 0:
        raise ValueError(f"no job size of the mix fits cluster {cluster.name}")
    return {size: weight / total for size, weight in sorted(mix.items())}


def mean_duration(workload: SyntheticWorkload) -> float:
    mu = math.log(workload.duration_median)
    return min(math.exp(mu + workload.duration_sigma**2 / 2), workload.duration_max)


def arrival_rate(workload: SyntheticWorkload, cluster: SimCluster) -> float:
    """Jobs per second that offer `load` x the cluster's GPUs."""
    mix = size_mix(workload, cluster)
    mean_gpus = sum(size * weight for size, weight in mix.items())
    return workload.load * cluster.total_gpus / (mean_gpus * mean_duration(workload))


def generate(workload: SyntheticWorkload, cluster: SimCluster, seed: int) -> list[JobSpec]:
    rng = random.Random(seed)
    mix = size_mix(workload, cluster)
    sizes, weights = list(mix), list(mix.values())
    rate = arrival_rate(workload, cluster)
    gpu_nodes = [n for n in cluster.nodes if n.gpus > 0]
    cpu_per_gpu = min(n.cpu_milli / n.gpus for n in gpu_nodes) * workload.cpu_share
    mem_per_gpu = min(n.memory_mib / n.gpus for n in gpu_nodes) * workload.memory_share
    mu = math.log(workload.duration_median)
    jobs: list[JobSpec] = []
    now = 0.0
    for index in range(workload.jobs):
        now += rng.expovariate(rate)
        size = rng.choices(sizes, weights)[0]
        pods, per_pod = (
            (1, size)
            if size <= workload.pod_gpus
            else (
                size // workload.pod_gpus,
                workload.pod_gpus,
            )
        )
        duration = min(rng.lognormvariate(mu, workload.duration_sigma), workload.duration_max)
        jobs.append(
            JobSpec(
                name=f"job-{index:05d}",
                arrival=round(now, 3),
                duration=round(max(duration, 1.0), 3),
                pods=pods,
                gpus_per_pod=per_pod,
                cpu_milli_per_pod=int(cpu_per_gpu * per_pod),
                memory_mib_per_pod=int(mem_per_gpu * per_pod),
            )
        )
    return jobs
