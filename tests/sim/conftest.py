"""Small clusters and jobs shared by the simulator tests."""

from __future__ import annotations

from phalanx.cluster import labels
from phalanx.sim.cluster import cluster_from_objects
from phalanx.sim.model import JobSpec, SimCluster


def node_object(name: str, gpus: int = 8, rack: str = "r0", block: str = "b0") -> dict[str, object]:
    resources = {"cpu": "64", "memory": "512Gi", "pods": "110", labels.GPU_RESOURCE: str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                labels.HOSTNAME: name,
                labels.TOPOLOGY_SPINE: block,
                labels.TOPOLOGY_LEAF: rack,
            },
        },
        "status": {"capacity": dict(resources), "allocatable": dict(resources)},
    }


TOPOLOGY = {
    "apiVersion": "scheduling.phalanx.io/v1alpha1",
    "kind": "NetworkTopology",
    "metadata": {"name": "default"},
    "spec": {
        "levels": [
            {"name": "block", "nodeLabels": [labels.TOPOLOGY_SPINE]},
            {"name": "rack", "nodeLabels": [labels.TOPOLOGY_LEAF]},
            {"name": "host", "nodeLabels": [labels.HOSTNAME]},
        ]
    },
}


def make_cluster(racks: dict[str, list[str]], block_of: dict[str, str] | None = None) -> SimCluster:
    """Nodes of 8 GPUs named per rack, e.g. {"r0": ["n0", "n1"]}."""
    objects = [
        node_object(name, rack=rack, block=(block_of or {}).get(rack, "b0"))
        for rack, names in racks.items()
        for name in names
    ]
    return cluster_from_objects("test", objects, [TOPOLOGY])


def job(
    name: str,
    arrival: float,
    duration: float,
    pods: int = 1,
    gpus: int = 8,
    priority: int = 0,
    may_preempt: bool = True,
    queue: str = "default",
) -> JobSpec:
    return JobSpec(
        name=name,
        arrival=arrival,
        duration=duration,
        pods=pods,
        gpus_per_pod=gpus,
        cpu_milli_per_pod=1000 * gpus,
        memory_mib_per_pod=8192 * gpus,
        priority=priority,
        may_preempt=may_preempt,
        queue=queue,
    )
