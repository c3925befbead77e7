"""The objects a DRA user writes, as plain dicts, and readings of claims for the e2e tests."""

from __future__ import annotations

from typing import Any

from phalanx.cluster.dra_slices import DRIVER

H100 = "NVIDIA H100 80GB HBM3"
GROUP_LABEL = "scheduling.phalanx.io/pod-group"
GATE = "scheduling.phalanx.io/gang"


def claim_template(name: str, count: int = 8, product: str = H100) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": _claim_spec(count, product)},
    }


def resource_claim(name: str, count: int = 8, product: str = H100) -> dict[str, Any]:
    """A ResourceClaim of its own (not from a template), that several pods can name."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name}, "spec": _claim_spec(count, product)}


def _claim_spec(count: int, product: str) -> dict[str, Any]:
    selector = f'device.attributes["{DRIVER}"].productName == "{product}"'
    return {"devices": {"requests": [{"name": "gpus", "exactly": {
        "deviceClassName": DRIVER, "count": count,
        "selectors": [{"cel": {"expression": selector}}]}}]}}


def podgroup(name: str, size: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"minMember": size,
                     "topology": {"networkTopology": "default", "required": "rack"}}}


def pod(name: str, group: str, template: str, gated: bool = False,
        claim: str | None = None) -> dict[str, Any]:
    """A gang member whose GPUs come from a claim made from `template`, or with `claim`
    the ResourceClaim of that name (shared by every pod that names it)."""
    source = {"resourceClaimName": claim} if claim else {"resourceClaimTemplateName": template}
    spec: dict[str, Any] = {
        "schedulerName": "default-scheduler" if gated else "phalanx",
        "restartPolicy": "Never",
        "tolerations": [{"operator": "Exists"}],  # kwok's taint, and not-ready ones
        "resourceClaims": [{"name": "gpus", **source}],
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                      "claims": [{"name": "gpus"}]}}],
    }
    if gated:
        spec["schedulingGates"] = [{"name": GATE}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {GROUP_LABEL: group}}, "spec": spec}


def dra_gang(name: str, size: int, template: str, gated: bool = False) -> list[dict[str, Any]]:
    return [podgroup(name, size),
            *(pod(f"{name}-{i}", name, template, gated) for i in range(size))]


def allocated_nodes(claim: dict[str, Any]) -> set[str]:
    """The pools (one per node, named after it) of the claim's allocated devices."""
    results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {})
    return {r["pool"] for r in results.get("results") or []}


def reserved_for(claim: dict[str, Any]) -> list[str]:
    return [r["name"] for r in (claim.get("status") or {}).get("reservedFor") or []]
