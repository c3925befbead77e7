"""The ceiling contender's assignment: every pod on a node that fits it, decided before the
clock starts (pure).

The ceiling measures what the API server allows, not what a scheduler decides, so its
decisions cost nothing inside the run: they are made here, first-fit by each pod's
requests (GPUs, CPU, memory, one pod slot) over the nodes in the cluster description's
order, pods in the order they were created. The GPU devices of each pod are the node's
next free indices, written with the binding as Phalanx writes them (the same request).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.e2e.workload import GPU
from phalanx.cluster.description import NodeShape
from phalanx.core.model.quantity import parse_quantity
from phalanx.core.parse.gpu_share import gpu_index_value

RESOURCES = ("cpu", "memory", GPU)


@dataclass(frozen=True)
class Binding:
    """One pod's place: what its pods/binding request carries."""

    namespace: str
    name: str
    node: str
    devices: str  # the gpu-index annotation's text ("" without GPUs)

    def to_json(self) -> list[str]:
        return [self.namespace, self.name, self.node, self.devices]

    @classmethod
    def from_json(cls, row: Sequence[str]) -> Binding:
        namespace, name, node, devices = row
        return cls(namespace, name, node, devices)


def requests_of(pod: Mapping[str, Any]) -> dict[str, int]:
    """The pod's requests in milli-units, summed over its containers."""
    total = dict.fromkeys(RESOURCES, 0)
    for container in pod["spec"].get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        for resource in RESOURCES:
            if resource in requests:
                total[resource] += parse_quantity(requests[resource])
    return total


def first_fit(pods: Iterable[Mapping[str, Any]], nodes: Sequence[str],
              shape: NodeShape) -> list[Binding]:
    """Each pod, in order, on the first node with room for its requests. Raises
    ValueError naming the first pod no node has room for (the workload is drawn to fit,
    so that would be a broken workload, not a result)."""
    capacity = {"cpu": parse_quantity(shape.cpu), "memory": parse_quantity(shape.memory),
                GPU: shape.gpus * 1000}
    free = [dict(capacity) for _ in nodes]
    slots = [shape.pods] * len(nodes)
    next_gpu = [0] * len(nodes)
    start = 0  # nodes before it have no GPU left: no GPU pod fits there
    plan = []
    for pod in pods:
        wanted = requests_of(pod)
        while start < len(nodes) and free[start][GPU] == 0:
            start += 1
        index = next((i for i in range(0 if wanted[GPU] == 0 else start, len(nodes))
                      if slots[i] > 0 and all(free[i][r] >= wanted[r] for r in RESOURCES)),
                     None)
        metadata = pod["metadata"]
        if index is None:
            raise ValueError(f"no node has room for pod {metadata['name']} ({wanted})")
        for resource in RESOURCES:
            free[index][resource] -= wanted[resource]
        slots[index] -= 1
        gpus = wanted[GPU] // 1000
        devices = gpu_index_value(list(range(next_gpu[index], next_gpu[index] + gpus)))
        next_gpu[index] += gpus
        plan.append(Binding(metadata["namespace"], metadata["name"], nodes[index], devices))
    return plan
