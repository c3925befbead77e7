"""What the workload end-to-end tests look at: which pods of a gang are bound, in which
rack, and what a PodGroup's conditions and Events say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from phalanx.cluster import LocalCluster
from polling import eventually, get_json, gone

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


def phalanx_group(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    found = cluster.kubectl("get", "pg", name, "-n", namespace, "-o", "json", check=False)
    return json.loads(found.stdout) if found.returncode == 0 else {}


def starts_whole_in_one_rack(
    cluster: LocalCluster, namespace: str, group: str, selector: str, count: int
) -> list[str]:
    """All `count` pods of the gang bound, in one rack, and its PodGroup says Scheduled."""
    assert eventually(lambda: len(bound(pods(cluster, namespace, selector))) == count, 120), (
        pods(cluster, namespace, selector)
    )
    nodes = bound(pods(cluster, namespace, selector))
    assert len(racks(cluster, nodes)) == 1, nodes
    assert eventually(
        lambda: condition(phalanx_group(cluster, namespace, group), "Scheduled").get("status")
        == "True"
    ), phalanx_group(cluster, namespace, group)
    return nodes


def starts_no_pod(
    cluster: LocalCluster, namespace: str, group: str, selector: str, count: int
) -> None:
    """All `count` pods exist, the PodGroup says no rack holds them, and none is bound."""

    def refused() -> bool:
        said = condition(phalanx_group(cluster, namespace, group), "Unschedulable")
        return said.get("reason") == "NoDomainFits"

    assert eventually(refused, 120), phalanx_group(cluster, namespace, group)
    assert len(pods(cluster, namespace, selector)) == count
    assert bound(pods(cluster, namespace, selector)) == []
    assert "NoDomainFits" in event_reasons(cluster, namespace, "PodGroup", group)


def owned_by_workload(
    cluster: LocalCluster, namespace: str, group: str, kind: str, name: str
) -> None:
    workload_uid = get_json(cluster, kind, name, "-n", namespace)["metadata"]["uid"]
    [owner] = phalanx_group(cluster, namespace, group)["metadata"]["ownerReferences"]
    assert owner["uid"] == workload_uid


def goes_with_its_workload(
    cluster: LocalCluster, namespace: str, kind: str, name: str, groups: list[str],
    selector: str,
) -> None:
    """Deleting the workload deletes its PodGroups (garbage collector) and its pods."""
    cluster.kubectl("delete", kind, name, "-n", namespace, "--wait=false")
    for group in groups:
        assert eventually(lambda group=group: gone(cluster, "pg", group, "-n", namespace), 120)
    assert eventually(lambda: not pods(cluster, namespace, selector), 120)


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def apply_example(cluster: LocalCluster, namespace: str, name: str) -> None:
    """`kubectl apply` a demo file of examples/workloads/ as `make run`'s cluster has it:
    with the demo's Queue team-a."""
    cluster.apply(EXAMPLES / "demo" / "00-queue.yaml")
    cluster.apply(EXAMPLES / "workloads" / name, namespace=namespace)
