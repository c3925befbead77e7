"""The Alibaba GPU cluster trace 2023 (cluster-trace-gpu-v2023), copied into
bench/data/alibaba-gpu-v2023/.

Pods are single-pod jobs with cpu, memory and GPU requests. A fractional GPU
request (`gpu_milli` < 1000, GPU sharing) counts as one whole GPU: Phalanx
does not share GPUs yet. As in the trace's paper (Weng et al., ATC'23,
"Beware of Fragmentation"), pods are drawn at random from the trace (seeded,
with replacement) and arrive one per `interval` seconds without departures
until their GPU requests reach `demand` x the cluster's GPUs; the figure of
merit is the share of GPUs allocated as demand grows. (Replaying the raw
creation/deletion times is not useful: at most 71 GPUs are ever requested at
once in the default trace, ~1% of its 6,212.)
"""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phalanx.cluster import labels
from phalanx.sim.cluster import cluster_from_objects
from phalanx.sim.model import JobSpec, SimCluster
from phalanx.sim.paths import resolve

DATA_DIR = Path("bench/data/alibaba-gpu-v2023")
DEFAULT_PODS = DATA_DIR / "openb_pod_list_default.csv"
DEFAULT_NODES = DATA_DIR / "openb_node_list_gpu_node.csv"
NEVER = 1.0e12
"""Duration of a pod that does not leave during the run."""


class TraceMissing(FileNotFoundError):
    pass


@dataclass(frozen=True, slots=True)
class TracePod:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    """Whole GPUs; a fractional request counts as one."""
    fractional: bool
    models: tuple[str, ...] = ()
    """GPU models it may use (`gpu_spec`, "V100M16|V100M32"); empty: any."""


def _rows(given: Path) -> list[dict[str, str]]:
    path = resolve(given)
    if not path.is_file():
        raise TraceMissing(
            f"Alibaba trace file {path} not found: the trace is kept in the repository "
            "(bench/data/alibaba-gpu-v2023/, relative to the repository root)"
        )
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def read_pods(path: Path = DEFAULT_PODS) -> list[TracePod]:
    pods: list[TracePod] = []
    for row in _rows(path):
        num_gpu = int(row["num_gpu"])
        milli = int(row.get("gpu_milli") or 0)
        fractional = num_gpu == 1 and 0 < milli < 1000
        pods.append(
            TracePod(
                name=row["name"],
                cpu_milli=int(row["cpu_milli"]),
                memory_mib=int(row["memory_mib"]),
                gpus=num_gpu,
                fractional=fractional,
                models=tuple(m for m in (row.get("gpu_spec") or "").split("|") if m),
            )
        )
    return pods


def demand_jobs(
    pods: list[TracePod], cluster_gpus: int, seed: int, demand: float = 1.3, interval: float = 1.0
) -> list[JobSpec]:
    """Random arrivals (seeded, with replacement) until GPU requests reach demand x cluster."""
    rng = random.Random(seed)
    target = demand * cluster_gpus
    jobs: list[JobSpec] = []
    requested = 0
    while requested < target:
        pod = rng.choice(pods)
        requested += pod.gpus
        jobs.append(
            JobSpec(
                name=f"{pod.name}-{len(jobs):05d}",
                arrival=len(jobs) * interval,
                duration=NEVER,
                pods=1,
                gpus_per_pod=pod.gpus,
                cpu_milli_per_pod=pod.cpu_milli,
                memory_mib_per_pod=pod.memory_mib,
                gpu_models=pod.models,
            )
        )
    return jobs


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
