"""Which pods are Phalanx's to place, and a pod as it is once placed."""

from __future__ import annotations

from dataclasses import replace

from phalanx.core.model.inputs import PodInfo
from phalanx.core.model.names import GANG_GATE, SCHEDULER_NAME


def bound_on(pod: PodInfo, node: str, devices: tuple[int, ...] | None = None) -> PodInfo:
    """The pod as it is once bound to `node` (binder mode) or pinned there and un-gated
    (gate mode): on the node, without Phalanx's gate; on `devices` if given."""
    gates = tuple(g for g in pod.scheduling_gates if g != GANG_GATE)
    if devices is None:
        return replace(pod, node_name=node, scheduling_gates=gates)
    return replace(pod, node_name=node, scheduling_gates=gates, gpu_devices=devices)


def is_ours(pod: PodInfo) -> bool:
    """Phalanx places the pod: binder mode (schedulerName) or gate mode (our gate)."""
    return pod.scheduler_name == SCHEDULER_NAME or GANG_GATE in pod.scheduling_gates


def is_waiting(pod: PodInfo) -> bool:
    """A pod Phalanx should place now: ours, unbound, unfinished, no foreign gate."""
    if pod.node_name or pod.finished or pod.terminating or not is_ours(pod):
        return False
    return all(gate == GANG_GATE for gate in pod.scheduling_gates)
