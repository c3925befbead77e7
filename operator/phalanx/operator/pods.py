"""Small readings of raw pod bodies the shell needs (the core parses them for itself)."""

from __future__ import annotations

from phalanx.core.model.names import GANG_GATE, SCHEDULER_NAME
from phalanx.operator.cache import Body


def pod_key(pod: Body) -> str:
    meta = pod.get("metadata", {})
    return f"{meta.get('namespace')}/{meta.get('name')}"


def node_of(pod: Body) -> str | None:
    node = pod.get("spec", {}).get("nodeName")
    return str(node) if node else None


def is_bound(pod: Body) -> bool:
    return node_of(pod) is not None


def is_gated(pod: Body) -> bool:
    gates = pod.get("spec", {}).get("schedulingGates") or []
    return any(g.get("name") == GANG_GATE for g in gates)


def wants_phalanx(pod: Body) -> bool:
    return bool(pod.get("spec", {}).get("schedulerName") == SCHEDULER_NAME)


def is_deleting(pod: Body) -> bool:
    return bool(pod.get("metadata", {}).get("deletionTimestamp"))

