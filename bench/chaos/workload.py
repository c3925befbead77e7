"""The chaos suite's workload and kill schedule, drawn from one seed (pure).

Gangs arrive over `submit_seconds` and finish `runtime` seconds after they run (kwok plays
the end through the `sim.phalanx.io/complete-after-seconds` annotation), so GPUs churn and
the operator keeps binding while it is being killed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

GPU = "nvidia.com/gpu"
GROUP_LABEL = "scheduling.phalanx.io/pod-group"
COMPLETE_AFTER = "sim.phalanx.io/complete-after-seconds"
PODGROUP_API = "scheduling.phalanx.io/v1alpha1"
GANG_PODS = (1, 2, 2, 4, 4, 8)  # drawn uniformly: small gangs more often
GPUS_PER_POD = (1, 2, 4, 8)


@dataclass(frozen=True, slots=True)
class ChaosGang:
    name: str
    pods: int
    gpus_per_pod: int
    arrival: float  # seconds after the start of submission
    runtime: int  # seconds from Running to Succeeded
    priority_class: str = ""  # the preemption mix: PodGroup's and pods' PriorityClass
    queue: str = ""  # the preemption mix: the PodGroup's Queue
    required: str = ""  # the preemption mix: the NetworkTopology level it must fit in

    def pod_names(self) -> frozenset[str]:
        return frozenset(f"{self.name}-{i}" for i in range(self.pods))


def draw_gangs(seed: int, count: int, submit_seconds: float, runtimes: tuple[int, int],
               ) -> list[ChaosGang]:
    """`count` gangs with seeded sizes, arrival times and runtimes, by arrival."""
    rng = random.Random(seed)
    gangs = [
        ChaosGang(f"c{i:04d}", rng.choice(GANG_PODS), rng.choice(GPUS_PER_POD),
                  round(rng.uniform(0, submit_seconds), 3), rng.randint(*runtimes))
        for i in range(count)
    ]
    return sorted(gangs, key=lambda g: (g.arrival, g.name))


def gang_objects(gang: ChaosGang, namespace: str) -> list[dict[str, Any]]:
    """The PodGroup (all pods required) first, then its pods."""
    spec: dict[str, Any] = {"minMember": gang.pods}
    if gang.priority_class:
        spec["priorityClassName"] = gang.priority_class
    if gang.queue:
        spec["queue"] = gang.queue
    if gang.required:
        spec["topology"] = {"required": gang.required}
    group = {
        "apiVersion": PODGROUP_API, "kind": "PodGroup",
        "metadata": {"name": gang.name, "namespace": namespace},
        "spec": spec,
    }
    gpus = str(gang.gpus_per_pod)
    pods: list[dict[str, Any]] = [
        {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {GROUP_LABEL: gang.name},
                         "annotations": {COMPLETE_AFTER: str(gang.runtime)}},
            "spec": {
                "schedulerName": "phalanx", "restartPolicy": "Never",
                "containers": [{"name": "worker", "image": "registry.local/chaos:1",
                                "resources": {"requests": {GPU: gpus}, "limits": {GPU: gpus}}}],
            },
        }
        for name in sorted(gang.pod_names())
    ]
    if gang.priority_class:
        for body in pods:
            body["spec"]["priorityClassName"] = gang.priority_class
    return [group, *pods]


def probe_object(name: str, namespace: str) -> dict[str, Any]:
    """A lone pod without GPUs: it fits at once, so its binding times the scheduler's return."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": "phalanx", "restartPolicy": "Never",
            "containers": [{"name": "probe", "image": "registry.local/chaos:1",
                            "resources": {"requests": {"cpu": "10m"}}}],
        },
    }
