"""Small readings of raw pod bodies the shell needs (the core parses them for itself)."""

from __future__ import annotations

from phalanx.operator.cache import Body
from phalanx.operator.settings import GATE, SCHEDULER_NAME

GROUP_LABELS = ("scheduling.phalanx.io/pod-group", "scheduling.x-k8s.io/pod-group")
VOLCANO_ANNOTATION = "scheduling.k8s.io/group-name"
TERMINAL = ("Succeeded", "Failed")


def pod_key(pod: Body) -> str:
    meta = pod.get("metadata", {})
    return f"{meta.get('namespace')}/{meta.get('name')}"


def group_name_of(pod: Body) -> str | None:
    """The group a pod names, in the contract's order: Phalanx label, Volcano, scheduler-plugins."""
    meta = pod.get("metadata", {})
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    for value in (labels.get(GROUP_LABELS[0]), annotations.get(VOLCANO_ANNOTATION),
                  labels.get(GROUP_LABELS[1])):
        if value:
            return str(value)
    return None


def group_key_of(pod: Body) -> str | None:
    name = group_name_of(pod)
    return f"{pod.get('metadata', {}).get('namespace')}/{name}" if name else None


def node_of(pod: Body) -> str | None:
    node = pod.get("spec", {}).get("nodeName")
    return str(node) if node else None


def is_bound(pod: Body) -> bool:
    return node_of(pod) is not None


def is_gated(pod: Body) -> bool:
    gates = pod.get("spec", {}).get("schedulingGates") or []
    return any(g.get("name") == GATE for g in gates)


def wants_phalanx(pod: Body) -> bool:
    return bool(pod.get("spec", {}).get("schedulerName") == SCHEDULER_NAME)


def phase_of(pod: Body) -> str:
    return str(pod.get("status", {}).get("phase") or "Pending")


def is_terminal(pod: Body) -> bool:
    return phase_of(pod) in TERMINAL


def is_deleting(pod: Body) -> bool:
    return bool(pod.get("metadata", {}).get("deletionTimestamp"))


def has_controller(pod: Body) -> bool:
    refs = pod.get("metadata", {}).get("ownerReferences") or []
    return any(bool(ref.get("controller")) for ref in refs)
