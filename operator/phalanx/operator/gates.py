"""Gate mode: the patch that pins a gated pod to its node and lifts Phalanx's gate.

Kubernetes lets a pod that still has scheduling gates have its required node affinity
narrowed (KEP-3838): empty terms may be set; existing terms may only gain requirements.
So the node is added as a `matchFields metadata.name In [node]` requirement to every
existing term (or as the only term), and the gate is removed in the same patch, so
kube-scheduler never sees the pod ungated without its node.
"""

from __future__ import annotations

from typing import Any

from phalanx.core.model.names import GANG_GATE, GPU_INDEX_ANNOTATION, PLAN_ANNOTATION
from phalanx.operator.cache import Body


def node_requirement(node: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": "In", "values": [node]}


def pinned_terms(pod: Body, node: str) -> list[dict[str, Any]]:
    """The pod's required node selector terms, each narrowed to `node`."""
    affinity = pod.get("spec", {}).get("affinity") or {}
    required = (affinity.get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return [{"matchFields": [node_requirement(node)]}]
    return [
        {**term, "matchFields": [*(term.get("matchFields") or []), node_requirement(node)]}
        for term in terms
    ]


def ungate_patch(pod: Body, node: str, devices: str = "", plan: str = "") -> dict[str, Any]:
    """A JSON merge patch: lists are replaced whole, so both lists are written in full.
    The GPU devices chosen (`devices`, the gpu-index annotation's text) go in the same
    patch, so no pod is ever un-gated without them, and so does the gang's plan (`plan`,
    on its first pod: plans.py)."""
    spec = pod.get("spec", {})
    gates = [g for g in spec.get("schedulingGates") or [] if g.get("name") != GANG_GATE]
    terms = pinned_terms(pod, node)
    patch: dict[str, Any] = {
        "spec": {
            "schedulingGates": gates or None,
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
                }
            },
        }
    }
    annotations = {GPU_INDEX_ANNOTATION: devices} if devices else {}
    if plan:
        annotations[PLAN_ANNOTATION] = plan
    if annotations:
        patch["metadata"] = {"annotations": annotations}
    return patch
