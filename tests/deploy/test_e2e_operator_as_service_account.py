"""The operator running with only the ServiceAccount's rights (a TokenRequest token, as in
the Deployment) places gangs: the ClusterRole holds every verb the operator needs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s

from operator_thread import operator_in_thread
from phalanx.cluster import LocalCluster
from phalanx.config import Settings
from phalanx.operator.main import Operator

pytestmark = pytest.mark.e2e

NAMESPACE = "phalanx-system"
GROUP_LABEL = "scheduling.phalanx.io/pod-group"
GATE = "scheduling.phalanx.io/gang"
FAST = Settings(debounce_seconds=0.1, max_delay_seconds=0.5, cycle_period_seconds=1.0)
PATIENCE = 90.0  # upper bound for waits; nothing here asserts speed


def account_configuration(cluster: LocalCluster) -> k8s.Configuration:
    token = cluster.kubectl("create", "token", "phalanx", "-n", NAMESPACE).stdout.strip()
    configuration = k8s.Configuration(host=cluster.server)
    configuration.api_key = {"BearerToken": token}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    configuration.ssl_ca_cert = str(cluster.ca_cert)
    return configuration


@pytest.fixture
def operator_as_account(installed_rbac: LocalCluster) -> Iterator[Operator]:
    cluster = installed_rbac
    # Let the operator create the default Queue itself: that needs `create queues`.
    cluster.kubectl("delete", "queues.scheduling.phalanx.io", "default", "--ignore-not-found")
    configuration = account_configuration(cluster)

    async def make() -> Operator:
        return Operator(configuration, FAST)

    with operator_in_thread(make, "phalanx-as-account", PATIENCE) as operator:
        yield operator


def pod(name: str, group: str, gpus: int, gated: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "default-scheduler" if gated else "phalanx",
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {
                    "requests": {"nvidia.com/gpu": str(gpus)},
                    "limits": {"nvidia.com/gpu": str(gpus)},
                },
            }
        ],
    }
    if gated:
        spec["schedulingGates"] = [{"name": GATE}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {GROUP_LABEL: group}},
        "spec": spec,
    }


def gang(name: str, size: int, gpus: int, gated: bool = False, **spec: Any) -> list[dict[str, Any]]:
    group = {
        "apiVersion": "scheduling.phalanx.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": size, **spec},
    }
    return [group, *(pod(f"{name}-{i}", name, gpus, gated) for i in range(size))]


def get_json(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


async def eventually(check: Callable[[], Any]) -> Any:
    async with asyncio.timeout(PATIENCE):
        while True:
            value = await asyncio.to_thread(check)
            if value:
                return value
            await asyncio.sleep(0.3)


async def test_gangs_are_placed_with_only_the_service_account_rights(
    installed_rbac: LocalCluster, namespace: str, operator_as_account: Operator
) -> None:
    cluster = installed_rbac
    await asyncio.to_thread(
        cluster.apply,
        gang("bound", 4, 8, topology={"required": "rack"})
        + gang("gated", 2, 4, gated=True)
        + gang("too-big", 2, 16),
        namespace,
    )

    def phase(name: str) -> str:
        group = get_json(cluster, "podgroups.scheduling.phalanx.io", name, "-n", namespace)
        return str((group.get("status") or {}).get("phase", ""))

    # Binder mode: pods/binding create, and the PodGroup status patch.
    await eventually(lambda: phase("bound") == "Running")
    pods = get_json(cluster, "pods", "-n", namespace)["items"]
    by_name = {p["metadata"]["name"]: p for p in pods}
    assert all(by_name[f"bound-{i}"]["spec"].get("nodeName") for i in range(4))

    # Gate mode: patch pods (affinity narrowed, gate removed).
    def ungated() -> bool:
        items = get_json(cluster, "pods", "-n", namespace, "-l", f"{GROUP_LABEL}=gated")["items"]
        return len(items) == 2 and all(not p["spec"].get("schedulingGates") for p in items)

    await eventually(ungated)

    # Events: create events (the reason a group waits).
    def warned() -> bool:
        events = get_json(
            cluster, "events", "-n", namespace, "--field-selector", "involvedObject.name=too-big"
        )["items"]
        return any(e["type"] == "Warning" for e in events)

    await eventually(warned)

    # Pods: status patch (a waiting pod's PodScheduled=False, as kube-scheduler writes it).
    def pods_say_why() -> bool:
        items = get_json(cluster, "pods", "-n", namespace, "-l", f"{GROUP_LABEL}=too-big")["items"]
        return len(items) == 2 and all(
            any(c["type"] == "PodScheduled" and c["status"] == "False"
                and c["reason"] == "Unschedulable" and "too-big" in c["message"]
                for c in p["status"].get("conditions") or []) for p in items)

    await eventually(pods_say_why)
    # Queues: create (the default Queue, deleted before the operator started).
    assert get_json(cluster, "queues.scheduling.phalanx.io", "default")["metadata"]["name"]
    assert operator_as_account.loop.errors == 0


async def test_a_queue_labelled_jobs_gang_is_made_and_placed_with_only_those_rights(
    installed_rbac: LocalCluster, namespace: str, operator_as_account: Operator
) -> None:
    """Automatic gangs: list and watch Jobs, create (server-side apply) the PodGroup."""
    cluster = installed_rbac
    template = {"spec": pod("x", "", 8)["spec"]}
    job = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "labels": {"scheduling.phalanx.io/queue": "default"}},
        "spec": {"parallelism": 2, "backoffLimit": 0, "template": template},
    }  # fmt: skip
    await asyncio.to_thread(cluster.apply, [job], namespace)

    def running() -> bool:
        found = cluster.kubectl("get", "pg", "job-train", "-n", namespace, "-o", "json",
                                check=False)  # fmt: skip
        return found.returncode == 0 and (
            (json.loads(found.stdout).get("status") or {}).get("phase") == "Running")

    await eventually(running)
    assert operator_as_account.loop.errors == 0
