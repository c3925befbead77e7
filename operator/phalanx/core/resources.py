"""Resource maps (name -> integer milli-units) and how to show them to people."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from phalanx.core.model import PodInfo
from phalanx.core.names import CPU, GPU, MEMORY

Resources = Mapping[str, int]
EMPTY: Resources = {}


def charged(pod: PodInfo) -> Resources:
    """What a pod counts against its queue: its requests, plus the part of one GPU a
    fractional pod asks for by `gpu-fraction` (so 4 pods of 0.25 use 1 GPU of quota). A
    `gpu-memory` ask counts no GPU: its part depends on the node it lands on."""
    if not pod.gpu_milli:
        return pod.requests
    return {**pod.requests, GPU: pod.requests.get(GPU, 0) + pod.gpu_milli}


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
