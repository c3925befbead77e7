"""Small Kubernetes objects (dicts, as the API server returns them) for plugin tests."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
GROUP = "scheduling.phalanx.io"


def node(name: str, rack: str, gpus: int = 8, ready: bool = True, cordoned: bool = False) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "example.com/rack": rack},
        },
        "spec": {"unschedulable": cordoned},
        "status": {
            "allocatable": {
                "cpu": "64",
                "memory": "512Gi",
                "nvidia.com/gpu": str(gpus),
                "pods": "110",
            },
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    name: str,
    gpus: int,
    node_name: str | None = None,
    group: str | None = None,
    namespace: str = "ml",
    created: str = "2025-01-01T00:00:00Z",
) -> Obj:
    labels = {f"{GROUP}/pod-group": group} if group else {}
    spec: Obj = {
        "schedulerName": "phalanx",
        "containers": [{"name": "main", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "creationTimestamp": created,
        },
        "spec": spec,
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def pod_group(
    name: str,
    min_member: int,
    queue: str = "default",
    required: str | None = None,
    namespace: str = "ml",
    created: str = "2025-01-01T00:00:00Z",
    status: Obj | None = None,
) -> Obj:
    spec: Obj = {"minMember": min_member, "queue": queue}
    if required:
        spec["topology"] = {"required": required}
    obj: Obj = {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def queue(
    name: str,
    capability: int | None = None,
    guarantee: int | None = None,
    parent: str | None = None,
) -> Obj:
    spec: Obj = {}
    if capability is not None:
        spec["capability"] = {"nvidia.com/gpu": str(capability)}
    if guarantee is not None:
        spec["guarantee"] = {"nvidia.com/gpu": str(guarantee)}
    if parent:
        spec["parent"] = parent
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def topology(name: str = "default") -> Obj:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "NetworkTopology",
        "metadata": {"name": name},
        "spec": {
            "levels": [
                {"name": "rack", "nodeLabels": ["example.com/rack"]},
                {"name": "host", "nodeLabels": ["kubernetes.io/hostname"]},
            ]
        },
    }


def pods(prefix: str, count: int, gpus: int, group: str, **kwargs: Any) -> list[Obj]:
    return [pod(f"{prefix}-{i}", gpus, group=group, **kwargs) for i in range(count)]
