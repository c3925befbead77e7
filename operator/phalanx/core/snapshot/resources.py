"""Resource maps (name -> integer milli-units) and how to show them to people."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from phalanx.core.model.device_share import DEVICE
from phalanx.core.model.inputs import NodeInfo, PodInfo
from phalanx.core.model.names import CPU, GPU, MEMORY
from phalanx.core.snapshot.devices import part_of

Resources = Mapping[str, int]
NO_NODES: Mapping[str, NodeInfo] = {}


def charged(pod: PodInfo, nodes: Mapping[str, NodeInfo] = NO_NODES) -> Resources:
    """What a pod counts against its queue: its requests, plus the part of one GPU a
    fractional pod takes (so 4 pods of gpu-fraction 0.25 use 1 GPU of quota). `nodes`
    (by name) gives the node a placed pod is on, which sets a `gpu-memory` pod's part."""
    node = nodes.get(pod.node_name) if pod.gpu_memory and pod.node_name else None
    milli = gpu_charge(pod.gpu_milli, pod.gpu_memory, node)
    if not milli:
        return pod.requests
    return {**pod.requests, GPU: pod.requests.get(GPU, 0) + milli}


def gpu_charge(gpu_milli: int, gpu_memory: int, node: NodeInfo | None) -> int:
    """GPU milli a fractional ask counts against its queue: its `gpu-fraction`, or the
    part of one device its `gpu-memory` takes on `node`. Before the pod is placed (no
    node) that part is unknown, so a whole GPU is counted, the most a fractional pod can
    take: admission then never lets a queue pass its capability, and once placed the pod
    counts only its real part."""
    if gpu_milli or not gpu_memory:
        return gpu_milli
    if node is None:
        return DEVICE
    return min(part_of(0, gpu_memory, node), DEVICE)


def add(left: Resources, right: Resources) -> dict[str, int]:
    return total_of((left, right))


def subtract(left: Resources, right: Resources) -> dict[str, int]:
    rest = dict(left)
    for name, amount in right.items():
        rest[name] = rest.get(name, 0) - amount
    return rest


def total_of(items: Iterable[Resources]) -> dict[str, int]:
    total: dict[str, int] = {}
    for item in items:
        for name, amount in item.items():
            total[name] = total.get(name, 0) + amount
    return total


def maximum(left: Resources, right: Resources) -> dict[str, int]:
    """Per-resource maximum, as Kubernetes combines init containers."""
    result = dict(left)
    for name, amount in right.items():
        if amount > result.get(name, 0):
            result[name] = amount
    return result


def nonzero(resources: Resources) -> dict[str, int]:
    return {name: amount for name, amount in resources.items() if amount}


def display_name(resource: str) -> str:
    return "GPUs" if resource == GPU else resource


def format_amount(resource: str, milli: int) -> str:
    """A quantity as people read it: GPUs and cores as numbers, memory in Gi."""
    if resource == MEMORY:
        return _trim(milli / 1000 / 2**30) + "Gi"
    if resource in (GPU, CPU) or milli % 1000 == 0:
        return _trim(milli / 1000)
    return f"{milli}m"


def format_resources(resources: Resources) -> str:
    parts = [
        f"{format_amount(name, amount)} {display_name(name)}"
        for name, amount in sorted(resources.items())
        if amount
    ]
    return ", ".join(parts) if parts else "nothing"


def _trim(value: float) -> str:
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"
