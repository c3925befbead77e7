"""What the workload end-to-end tests look at: which pods of a gang are bound, in which
rack, and what a PodGroup's conditions and Events say."""

from __future__ import annotations

from typing import Any

from phalanx.cluster import LocalCluster
from polling import get_json

LEAF = "network.topology.nvidia.com/leaf"
GPU_POD = {"limits": {"nvidia.com/gpu": "8"}, "requests": {"cpu": "100m"}}


def gpu_template(labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A pod template Phalanx binds (schedulerName), one whole 8-GPU node per pod."""
    return {
        "metadata": {"labels": labels or {}},
        "spec": {
            "schedulerName": "phalanx",
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": GPU_POD}
            ],
            **spec,
        },
    }


def pods(cluster: LocalCluster, namespace: str, selector: str = "") -> list[dict[str, Any]]:
    args = ["pods", "-n", namespace] + (["-l", selector] if selector else [])
    return [
        p for p in get_json(cluster, *args)["items"] if not p["metadata"].get("deletionTimestamp")
    ]


def bound(items: list[dict[str, Any]]) -> list[str]:
    return sorted(p["spec"]["nodeName"] for p in items if p["spec"].get("nodeName"))


def racks(cluster: LocalCluster, nodes: list[str]) -> set[str]:
    labels = {
        n["metadata"]["name"]: n["metadata"]["labels"] for n in get_json(cluster, "nodes")["items"]
    }
    return {labels[node][LEAF] for node in nodes}


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    for found in (obj.get("status") or {}).get("conditions") or []:
        if found.get("type") == kind:
            return dict(found)
    return {}


def event_reasons(cluster: LocalCluster, namespace: str, kind: str, name: str) -> set[str]:
    items = get_json(cluster, "events", "-n", namespace)["items"]
    return {
        e["reason"]
        for e in items
        if e["involvedObject"].get("name") == name and e["involvedObject"].get("kind") == kind
    }
