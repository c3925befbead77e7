"""The real `phalanx operator` process against the real API server: /metrics reflects the
cluster once a gang is placed, the probes answer, and the JSON logs carry cycle, group and
queue."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phalanx.cluster import LocalCluster

from .operator_process import OperatorProcess

pytestmark = pytest.mark.e2e

GROUP_LABEL = "scheduling.phalanx.io/pod-group"
GPU = "nvidia.com/gpu"


def get_json(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def gang(name: str, size: int, gpus: int, queue: str) -> list[dict[str, Any]]:
    group = {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": name}, "spec": {"minMember": size, "queue": queue}}
    pods = [{
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{name}-{i}", "labels": {GROUP_LABEL: name}},
        "spec": {"schedulerName": "phalanx", "restartPolicy": "Never", "containers": [{
            "name": "main", "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}}}]},
    } for i in range(size)]
    return [group, *pods]


def gpu_count(pod: dict[str, Any]) -> float:
    return sum(float(c.get("resources", {}).get("requests", {}).get(GPU, 0))
               for c in pod["spec"]["containers"])


def cluster_gpus(cluster: LocalCluster) -> tuple[float, float]:
    """(allocated, free) GPUs as the API server shows them: requests of bound, unfinished
    pods; free capacity on Ready, schedulable nodes."""
    used: dict[str, float] = {}
    for pod in get_json(cluster, "pods", "-A")["items"]:
        node = pod["spec"].get("nodeName")
        if node and pod.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
            used[node] = used.get(node, 0.0) + gpu_count(pod)
    free = 0.0
    for node in get_json(cluster, "nodes")["items"]:
        ready = any(c["type"] == "Ready" and c["status"] == "True"
                    for c in node.get("status", {}).get("conditions", []))
        if ready and not node["spec"].get("unschedulable"):
            capacity = float(node["status"].get("allocatable", {}).get(GPU, 0))
            free += max(capacity - used.get(node["metadata"]["name"], 0.0), 0.0)
    return sum(used.values()), free


@pytest.fixture
def queue(cluster: LocalCluster) -> Iterator[str]:
    name = f"q-{secrets.token_hex(3)}"
    cluster.apply([{"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "Queue",
                    "metadata": {"name": name}, "spec": {"weight": 1}}])
    yield name
    cluster.kubectl("delete", "queues.scheduling.phalanx.io", name, "--ignore-not-found")


@pytest.fixture
def operator(cluster: LocalCluster, tmp_path: Path) -> Iterator[OperatorProcess]:
    process = OperatorProcess("operator", cluster.kubeconfig, tmp_path).start()
    yield process
    try:
        assert process.stop() == 0
    finally:
        process.ensure_dead()


def test_metrics_show_the_placed_gang(
    cluster: LocalCluster, namespace: str, queue: str, operator: OperatorProcess
) -> None:
    operator.wait_for(lambda: operator.get("/readyz") == (200, "caches synced\n"), "ready")
    assert operator.get("/healthz")[0] == 200
    assert operator.sample("phalanx_leader") == 1  # no election: it leads at once

    def gauges_match_cluster() -> tuple[float, float] | None:
        allocated, free = cluster_gpus(cluster)
        seen = (operator.sample("phalanx_gpus_allocated"), operator.sample("phalanx_gpus_free"))
        return (allocated, free) if seen == (allocated, free) else None

    allocated_before, free_before = operator.wait_for(gauges_match_cluster, "GPU gauges = cluster")
    bindings_before = operator.sample("phalanx_bindings_total")

    cluster.apply(gang("train", 2, 8, queue), namespace)

    def running() -> bool:
        group = get_json(cluster, "podgroups.scheduling.phalanx.io", "train", "-n", namespace)
        return (group.get("status") or {}).get("phase") == "Running"

    operator.wait_for(running, "gang Running")
    pods = get_json(cluster, "pods", "-n", namespace)["items"]
    assert len(pods) == 2 and all(p["spec"].get("nodeName") for p in pods)

    allocated, free = operator.wait_for(gauges_match_cluster, "GPU gauges = cluster")
    assert allocated == allocated_before + 16  # the gang's 2 x 8 GPUs
    assert free == free_before - 16
    assert operator.sample("phalanx_bindings_total") == (bindings_before or 0) + 2
    operator.wait_for(
        lambda: operator.sample("phalanx_podgroups", phase="Running", queue=queue) == 1,
        "podgroups gauge shows the gang Running in its queue")
    assert (operator.sample("phalanx_cycle_duration_seconds_count") or 0) > 0
    assert operator.sample("phalanx_gang_time_to_running_seconds_count", size="2") == 1

    placed = [r for r in operator.records()
              if r.get("event") == "gang placed" and r.get("group") == f"{namespace}/train"]
    assert len(placed) == 1
    assert placed[0]["queue"] == queue and isinstance(placed[0]["cycle"], int)
    assert placed[0]["level"] == "info" and placed[0]["logger"] == "phalanx.operator"
