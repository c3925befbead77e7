"""The end-to-end benchmark's workload: seeded gangs, and the objects each scheduler gets.

Pure: no I/O beyond reading the workload file. The same gangs become Phalanx PodGroups and
pods with schedulerName `phalanx` (gang semantics); plain pods with schedulerName
`default-scheduler` for kube-scheduler (no group, no gang); or, for kube-scheduler with its
gang and topology plugins, one upstream PodGroup (`scheduling.k8s.io/v1beta1`,
`policy.gang.minCount` = the gang's pods, `schedulingConstraints.topology[0].key` = the rack
label, or the block label for a gang with more GPUs than a rack) per gang and pods that join
it by `spec.schedulingGroup.podGroupName`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from phalanx.cluster.description import ClusterDescription, description_from_dict
from phalanx.cluster.kwok_config import DEFAULT_LEASE_SECONDS

GPU = "nvidia.com/gpu"
GROUP_LABEL = "scheduling.phalanx.io/pod-group"
GANG_LABEL = "bench.phalanx.io/gang"
PODGROUP_API = "scheduling.phalanx.io/v1alpha1"
UPSTREAM_PODGROUP_API = "scheduling.k8s.io/v1beta1"  # the pinned release's (1.37)
RACK_LABEL = "network.topology.nvidia.com/leaf"
BLOCK_LABEL = "network.topology.nvidia.com/spine"


@dataclass(frozen=True)
class Workload:
    """The parameters of bench/workloads/e2e.yaml."""

    name: str
    seed: int
    cluster: str
    gangs: int
    gang_pods: Mapping[int, float]
    gpus_per_pod: Mapping[int, float]
    gpu_budget: float
    cpu_per_gpu: str
    memory_per_gpu: str
    namespace: str
    concurrency: int
    scheduler_qps: int
    scheduler_burst: int
    timeout_seconds: float
    settle_seconds: float
    smoke: Mapping[str, int] = field(default_factory=dict)
    stall_seconds: float = 60.0
    # the control plane's settings for a large cluster (components.LARGE_*_ARGS)
    large_cluster: bool = False
    # kwok renews each node's Lease every quarter of this: 12,500 nodes at the default
    # 120 s would write 417 Leases a second, most of what this API server can take
    kwok_lease_seconds: int = DEFAULT_LEASE_SECONDS

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "seed": self.seed, "cluster": self.cluster, "gangs": self.gangs,
            "gangPods": {str(k): v for k, v in self.gang_pods.items()},
            "gpusPerPod": {str(k): v for k, v in self.gpus_per_pod.items()},
            "gpuBudget": self.gpu_budget, "cpuPerGpu": self.cpu_per_gpu,
            "memoryPerGpu": self.memory_per_gpu, "namespace": self.namespace,
            "concurrency": self.concurrency,
            "kubeScheduler": {"qps": self.scheduler_qps, "burst": self.scheduler_burst},
            "timeoutSeconds": self.timeout_seconds, "settleSeconds": self.settle_seconds,
            "stallSeconds": self.stall_seconds,
            **({"largeCluster": True} if self.large_cluster else {}),
            **({"kwokLeaseSeconds": self.kwok_lease_seconds}
               if self.kwok_lease_seconds != DEFAULT_LEASE_SECONDS else {}),
        }


@dataclass(frozen=True)
class Gang:
    name: str
    pods: int
    gpus_per_pod: int

    @property
    def gpus(self) -> int:
        return self.pods * self.gpus_per_pod

    def pod_names(self) -> list[str]:
        return [f"{self.name}-{i:02d}" for i in range(self.pods)]


def load_workload(path: str | Path) -> Workload:
    data = yaml.safe_load(Path(path).read_text())
    scheduler = data.get("kubeScheduler") or {}
    return Workload(
        name=str(data["name"]),
        seed=int(data["seed"]),
        cluster=str(data["cluster"]),
        gangs=int(data["gangs"]),
        gang_pods={int(k): float(v) for k, v in data["gangPods"].items()},
        gpus_per_pod={int(k): float(v) for k, v in data["gpusPerPod"].items()},
        gpu_budget=float(data["gpuBudget"]),
        cpu_per_gpu=str(data["cpuPerGpu"]),
        memory_per_gpu=str(data["memoryPerGpu"]),
        namespace=str(data["namespace"]),
        concurrency=int(data["concurrency"]),
        scheduler_qps=int(scheduler.get("qps", 5000)),
        scheduler_burst=int(scheduler.get("burst", 10000)),
        timeout_seconds=float(data.get("timeoutSeconds", 600)),
        settle_seconds=float(data.get("settleSeconds", 5)),
        smoke={str(k): int(v) for k, v in (data.get("smoke") or {}).items()},
        stall_seconds=float(data.get("stallSeconds", 60)),
        large_cluster=bool(data.get("largeCluster", False)),
        kwok_lease_seconds=int(data.get("kwokLeaseSeconds", DEFAULT_LEASE_SECONDS)),
    )


def draw_gangs(workload: Workload, cluster_gpus: int) -> list[Gang]:
    """Seeded gangs whose GPUs fit `gpu_budget` of the cluster (halving GPUs per pod of
    randomly picked gangs until they do)."""
    rng = random.Random(workload.seed)
    sizes, size_weights = zip(*sorted(workload.gang_pods.items()), strict=True)
    gpus, gpu_weights = zip(*sorted(workload.gpus_per_pod.items()), strict=True)
    gangs = [
        Gang(f"g{i:04d}", rng.choices(sizes, size_weights)[0], rng.choices(gpus, gpu_weights)[0])
        for i in range(workload.gangs)
    ]
    budget = math.floor(workload.gpu_budget * cluster_gpus)
    while sum(g.gpus for g in gangs) > budget:
        shrinkable = [i for i, g in enumerate(gangs) if g.gpus_per_pod > 1]
        if not shrinkable:
            raise ValueError(f"{len(gangs)} gangs need more than {budget} GPUs even at 1 per pod")
        i = rng.choice(shrinkable)
        gangs[i] = replace(gangs[i], gpus_per_pod=gangs[i].gpus_per_pod // 2)
    return gangs


def submission_waves(gangs: list[Gang]) -> list[list[Gang]]:
    """Gangs grouped by GPUs per pod, largest first (the order pods are created in)."""
    by_size: dict[int, list[Gang]] = {}
    for gang in gangs:
        by_size.setdefault(gang.gpus_per_pod, []).append(gang)
    return [by_size[size] for size in sorted(by_size, reverse=True)]


def pod_object(workload: Workload, gang: Gang, name: str, scheduler: str,
               upstream_group: bool = False) -> dict[str, Any]:
    """A pod of `gang`; for `phalanx` it names its PodGroup by label, with `upstream_group`
    its upstream PodGroup by `spec.schedulingGroup`, otherwise it stands alone."""
    labels = {"app": "bench-e2e", GANG_LABEL: gang.name}
    if scheduler == "phalanx":
        labels[GROUP_LABEL] = gang.name
    gpus = str(gang.gpus_per_pod)
    requests = {
        "cpu": _times(workload.cpu_per_gpu, gang.gpus_per_pod),
        "memory": _times(workload.memory_per_gpu, gang.gpus_per_pod),
        GPU: gpus,
    }
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{
            "name": "worker",
            "image": "registry.local/bench-worker:1",
            "resources": {"requests": requests, "limits": {GPU: gpus}},
        }],
    }
    if upstream_group:
        spec["schedulingGroup"] = {"podGroupName": gang.name}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": workload.namespace, "labels": labels},
        "spec": spec,
    }


def upstream_pod_group_object(workload: Workload, gang: Gang, rack_gpus: int) -> dict[str, Any]:
    """kube-scheduler's own PodGroup: all pods or none (gang), inside one rack (one block
    when the gang has more GPUs than a rack holds, which no rack could ever take)."""
    key = RACK_LABEL if gang.gpus <= rack_gpus else BLOCK_LABEL
    return {
        "apiVersion": UPSTREAM_PODGROUP_API,
        "kind": "PodGroup",
        "metadata": {"name": gang.name, "namespace": workload.namespace},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": gang.pods}},
            "schedulingConstraints": {"topology": [{"key": key}]},
        },
    }


def pod_group_object(workload: Workload, gang: Gang) -> dict[str, Any]:
    return {
        "apiVersion": PODGROUP_API,
        "kind": "PodGroup",
        "metadata": {"name": gang.name, "namespace": workload.namespace},
        "spec": {"minMember": gang.pods, "queue": "default"},
    }


def _times(quantity: str, factor: int) -> str:
    """`16` x 2 -> `32`, `128Gi` x 2 -> `256Gi` (an integer and a binary suffix only)."""
    digits = quantity.rstrip("KMGTPEi")
    return f"{int(digits) * factor}{quantity[len(digits):]}"


def layout_description(nodes: int, template: ClusterDescription) -> ClusterDescription:
    """A block/rack/host cluster of `nodes` nodes shaped like `template`'s nodes.

    Racks of the largest size up to 25 that divides `nodes`, blocks of up to 10 racks.
    """
    per_rack = max(d for d in range(1, 26) if nodes % d == 0)
    racks = nodes // per_rack
    per_block = max(d for d in range(1, 11) if racks % d == 0)
    shape = template.shape
    return description_from_dict({
        "name": template.name,
        "layout": {"blocks": racks // per_block, "racksPerBlock": per_block,
                   "nodesPerRack": per_rack},
        "node": {"gpus": shape.gpus, "gpuProduct": shape.gpu_product,
                 "gpuMemoryMiB": shape.gpu_memory_mib, "cpu": shape.cpu,
                 "memory": shape.memory, "pods": shape.pods},
    })
