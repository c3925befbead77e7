"""The Alibaba GPU cluster trace 2023 (cluster-trace-gpu-v2023), copied into
bench/data/alibaba-gpu-v2023/.

Pods are single-pod jobs with cpu, memory and GPU requests. A fractional GPU
request (`gpu_milli` < 1000, GPU sharing) is a fractional pod: it takes that part
of one GPU and shares the GPU with other such pods (`JobSpec.gpu_milli_per_pod`).
A pod's `gpu_spec` lists the GPU models it may use. The arrivals are the trace's
paper's (Weng et al., ATC'23, "Beware of Fragmentation", FGD), built by the
same function as the packing benchmark (`phalanx.sim.packing.trace.arrivals`):
the trace's pods in a seeded order, then pods drawn with replacement, until
their GPU milli reaches `demand` x the cluster's; one arrives per `interval`
seconds and none leaves; the figure of merit is the share of GPU milli
allocated at the end. (Replaying the raw creation/deletion times is not useful:
at most 71 GPUs are ever requested at once in the default trace, ~1% of its
6,212.)
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from phalanx.cluster import labels
from phalanx.sim.cluster import cluster_from_objects
from phalanx.sim.model import JobSpec, SimCluster
from phalanx.sim.packing.trace import (
    DEVICE_MILLI,
    PackPod,
    arrivals,
    read_trace,
    whole_gpu_only,
)
from phalanx.sim.paths import resolve

DATA_DIR = Path("bench/data/alibaba-gpu-v2023")
DEFAULT_PODS = DATA_DIR / "openb_pod_list_default.csv"
DEFAULT_NODES = DATA_DIR / "openb_node_list_gpu_node.csv"
NEVER = 1.0e12
"""Duration of a pod that does not leave during the run."""


class TraceMissing(FileNotFoundError):
    pass


def _existing(given: Path) -> Path:
    path = resolve(given)
    if not path.is_file():
        raise TraceMissing(
            f"Alibaba trace file {path} not found: the trace is kept in the repository "
            "(bench/data/alibaba-gpu-v2023/, relative to the repository root)"
        )
    return path


def _rows(given: Path) -> list[dict[str, str]]:
    with _existing(given).open(newline="") as handle:
        return list(csv.DictReader(handle))


def read_pods(path: Path = DEFAULT_PODS, whole_only: bool = False) -> list[PackPod]:
    """The trace's pods (`whole_only`: without its fractional ones)."""
    pods = read_trace(_existing(path))
    return whole_gpu_only(pods) if whole_only else pods


def job_of(pod: PackPod, index: int, interval: float) -> JobSpec:
    """Arrival `index` as a single-pod job that never leaves."""
    return JobSpec(
        name=f"{pod.name}-{index:05d}",
        arrival=index * interval,
        duration=NEVER,
        pods=1,
        gpus_per_pod=0 if pod.fractional else pod.gpus,
        gpu_milli_per_pod=pod.gpu_milli if pod.fractional else 0,
        cpu_milli_per_pod=pod.cpu_milli,
        memory_mib_per_pod=pod.memory_mib,
        gpu_models=pod.models,
    )


def demand_jobs(
    pods: list[PackPod], cluster_gpus: int, seed: int, demand: float = 1.3, interval: float = 1.0
) -> list[JobSpec]:
    """The paper's arrivals (seeded) until their GPU milli reaches demand x the cluster's."""
    sequence = arrivals(pods, cluster_gpus * DEVICE_MILLI, seed, demand)
    return [job_of(pod, i, interval) for i, pod in enumerate(sequence)]


def openb_cluster(path: Path = DEFAULT_NODES) -> SimCluster:
    """The trace's own GPU nodes (1/2/4/8 GPUs, mixed cpu and memory); no network topology."""
    nodes: list[dict[str, Any]] = []
    for row in _rows(path):
        resources = {
            "cpu": f"{int(row['cpu_milli'])}m",
            "memory": f"{int(row['memory_mib'])}Mi",
            "pods": "110",
            labels.GPU_RESOURCE: str(int(row["gpu"])),
        }
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": row["sn"],
                    "labels": {
                        labels.HOSTNAME: row["sn"],
                        labels.GPU_PRODUCT: row.get("model") or "",
                    },
                },
                "spec": {},
                "status": {"capacity": dict(resources), "allocatable": dict(resources)},
            }
        )
    return cluster_from_objects("alibaba-openb", nodes)
