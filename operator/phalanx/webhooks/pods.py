"""Which pods the mutating webhook sends to Phalanx, and how (pure).

A pod is sent when it belongs to a gang Phalanx manages: it names a Phalanx PodGroup
(label `scheduling.phalanx.io/pod-group`), or carries the queue label itself, or its
workload (the top of its owner chain: a Job, a JobSet's Job, a PyTorchJob, ...) carries
the queue label, or that workload lives in a namespace labelled with a default queue
(`scheduling.phalanx.io/default-queue`: the operator makes such workloads gangs of that
queue). Every other pod is left as it is, and so is a pod that names another scheduler,
one already sent (schedulerName phalanx, or the gate) and one created on a node.

How it is sent follows the operator's mode: `binder` and `both` set `schedulerName:
phalanx` (the operator binds it, with or without kube-scheduler in the cluster); `gate`
adds the gate `scheduling.phalanx.io/gang` (the operator pins the gang's nodes and removes
the gate, kube-scheduler binds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from phalanx.config.settings import Mode
from phalanx.core.model.names import (
    GANG_GATE,
    GROUP_LABEL,
    NAMESPACE_DEFAULT_QUEUE_LABEL,
    QUEUE_KEY,
    SCHEDULER_NAME,
)
from phalanx.workloads import kind_of

DEFAULT_SCHEDULER = "default-scheduler"  # what the API server defaults schedulerName to


@dataclass(frozen=True, slots=True)
class PodDecision:
    """`spec`: the fields to set on the pod's spec (empty: leave it); `reason`: why, for the
    log and the tests."""

    spec: Mapping[str, Any]
    reason: str

    @property
    def changes(self) -> bool:
        return bool(self.spec)


def decide_pod(
    pod: Mapping[str, Any],
    owners: Sequence[Mapping[str, Any]],
    namespace_labels: Mapping[str, str],
    mode: Mode,
) -> PodDecision:
    """`owners`: the pod's controller chain as read, nearest first (a JobSet's pod: its
    Job, then the JobSet); the last one is the workload whose gang the pod would join."""
    spec = _mapping(pod.get("spec"))
    scheduler = spec.get("schedulerName") or DEFAULT_SCHEDULER
    if scheduler == SCHEDULER_NAME:
        return PodDecision({}, "already names scheduler phalanx")
    if scheduler != DEFAULT_SCHEDULER:
        return PodDecision({}, f"names another scheduler ({scheduler})")
    gates = [g for g in spec.get("schedulingGates") or [] if isinstance(g, Mapping)]
    if any(g.get("name") == GANG_GATE for g in gates):
        return PodDecision({}, "already carries the gate")
    if spec.get("nodeName"):
        return PodDecision({}, "created on a node")
    why = gang_source(pod, owners, namespace_labels)
    if why is None:
        return PodDecision({}, "belongs to no gang Phalanx manages")
    if mode.binds:
        return PodDecision({"schedulerName": SCHEDULER_NAME}, why)
    return PodDecision({"schedulingGates": [*gates, {"name": GANG_GATE}]}, why)


def gang_source(
    pod: Mapping[str, Any],
    owners: Sequence[Mapping[str, Any]],
    namespace_labels: Mapping[str, str],
) -> str | None:
    """What makes the pod part of a managed gang, in words; None: nothing does."""
    labels = _labels(pod)
    if labels.get(GROUP_LABEL):
        return f"names PodGroup {labels[GROUP_LABEL]}"
    if labels.get(QUEUE_KEY):
        return f"carries queue label {labels[QUEUE_KEY]}"
    workload = owners[-1] if owners else None
    if workload is None or kind_of(str(workload.get("kind"))) is None:
        return None
    name = f"{workload.get('kind')} {_mapping(workload.get('metadata')).get('name')}"
    queue = _labels(workload).get(QUEUE_KEY)
    if queue:
        return f"its workload {name} has queue {queue}"
    default = namespace_labels.get(NAMESPACE_DEFAULT_QUEUE_LABEL)
    if default:
        return f"its workload {name} is in a namespace with default queue {default}"
    return None


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    labels = _mapping(obj.get("metadata")).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
