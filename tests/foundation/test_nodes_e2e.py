"""Simulated GPU nodes and pod lifecycles on the shared cluster (kwok)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from phalanx.cluster import ClusterDescription, LocalCluster, node_objects
from phalanx.cluster.labels import COMPLETE_AFTER_ANNOTATION, FAIL_AFTER_ANNOTATION
from polling import eventually, get_json

pytestmark = pytest.mark.e2e


def test_description_nodes_are_ready_with_their_labels_and_capacity(
    cluster: LocalCluster, small_cluster: ClusterDescription
) -> None:
    nodes = {node["metadata"]["name"]: node for node in get_json(cluster, "nodes")["items"]}
    expected = node_objects(small_cluster)
    assert set(nodes) == {node["metadata"]["name"] for node in expected}
    for want in expected:
        have = nodes[want["metadata"]["name"]]
        assert have["metadata"]["labels"].items() >= want["metadata"]["labels"].items()
        assert have["status"]["allocatable"] == want["status"]["allocatable"]
        assert have["status"]["capacity"] == want["status"]["capacity"]
        assert not have["spec"].get("taints")
        ready = [c for c in have["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True"


def test_nodes_heartbeat_through_leases(cluster: LocalCluster, small_cluster: ClusterDescription
                                        ) -> None:
    def leases() -> set[str]:
        items = get_json(cluster, "leases", "-n", "kube-node-lease")["items"]
        return {lease["metadata"]["name"] for lease in items}

    names = {host.name for host in small_cluster.hosts}
    assert eventually(lambda: names <= leases())


def pod(name: str, node: str | None = None, annotations: dict[str, str] | None = None,
        scheduler: str = "phalanx") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"limits": {"nvidia.com/gpu": 1}}}],
    }
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": annotations or {}}, "spec": spec}


def phase(cluster: LocalCluster, namespace: str, name: str) -> str:
    result = cluster.kubectl("get", "pod", name, "-n", namespace, "-o",
                             "jsonpath={.status.phase}", check=False)
    return result.stdout if result.returncode == 0 else "Gone"


def test_a_pod_on_a_kwok_node_runs_until_deleted(
    cluster: LocalCluster, namespace: str, small_cluster: ClusterDescription
) -> None:
    cluster.apply([pod("runner", node=small_cluster.hosts[0].name)], namespace=namespace)
    assert eventually(lambda: phase(cluster, namespace, "runner") == "Running")
    status = get_json(cluster, "pod", "runner", "-n", namespace)["status"]
    assert status["podIP"] and status["containerStatuses"][0]["ready"] is True
    cluster.kubectl("delete", "pod", "runner", "-n", namespace, "--wait=false")
    assert eventually(lambda: phase(cluster, namespace, "runner") == "Gone")


@pytest.mark.parametrize(
    ("annotation", "final"), [(COMPLETE_AFTER_ANNOTATION, "Succeeded"),
                              (FAIL_AFTER_ANNOTATION, "Failed")]
)
def test_annotated_pods_finish_after_their_duration(
    cluster: LocalCluster, namespace: str, small_cluster: ClusterDescription,
    annotation: str, final: str,
) -> None:
    name = final.lower()
    cluster.apply([pod(name, node=small_cluster.hosts[1].name, annotations={annotation: "2"})],
                  namespace=namespace)
    assert eventually(lambda: phase(cluster, namespace, name) in ("Running", final))
    assert eventually(lambda: phase(cluster, namespace, name) == final)
    state = get_json(cluster, "pod", name, "-n", namespace)["status"]["containerStatuses"][0]
    assert state["state"]["terminated"]["exitCode"] == (0 if final == "Succeeded" else 1)


async def test_binder_mode_binding_makes_a_pod_run(
    cluster: LocalCluster, namespace: str, small_cluster: ClusterDescription,
    api_client: client.ApiClient,
) -> None:
    """What the operator does in binder mode: POST pods/binding for a phalanx pod."""
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_pod(namespace, pod("bound"))
    created = await core.read_namespaced_pod("bound", namespace)
    assert created.spec.node_name is None  # no scheduler serves schedulerName phalanx
    target = small_cluster.hosts[2].name
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name="bound"),
        target=client.V1ObjectReference(kind="Node", name=target),
    )
    await core.create_namespaced_pod_binding("bound", namespace, binding,
                                             _preload_content=False)
    assert eventually(lambda: phase(cluster, namespace, "bound") == "Running")
    assert (await core.read_namespaced_pod("bound", namespace)).spec.node_name == target
