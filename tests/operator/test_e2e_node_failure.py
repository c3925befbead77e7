"""A node running part of a gang fails (NotReady, a NoExecute taint, or deleted): the
PodGroup gets one Event naming the node, the gang's replacement pod goes to the same rack
when the rack has room, and a gang that cannot be made whole within its timeout is released
(its pods with a controller deleted) with an Event saying why.

The local cluster runs neither the node lifecycle controller nor the pod garbage collector,
so the test does what they would: after the node fails (or is deleted), the pods on it are
deleted (eviction; for a deleted node, the pod GC's removal of orphaned pods), and the
gang's controller makes a replacement (here the test creates it). The gang's nodes are a
pool of this test's own (tainted so that no other test's pods land there), in a
NetworkTopology of its own. With `avoid_not_ready_level: rack`, a new gang keeps out of a
rack holding a NotReady node.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from operator_e2e import (
    FAST,
    apply,
    eventually,
    group_of,
    kubectl_json,
    pod,
    podgroup,
    pods_in,
)

from operator_thread import operator_in_thread
from phalanx.cluster import LocalCluster, labels
from phalanx.cluster.description import Host, NodeShape, node_object
from phalanx.operator.kube.client import load_configuration
from phalanx.operator.main import Operator

pytestmark = pytest.mark.e2e

RACK = "test.phalanx.io/rack"
POOL = "test.phalanx.io/pool"
SHAPE = NodeShape()
FAILURES = ("NotReady", "NoExecute", "deleted")


def pool_nodes(namespace: str, racks: int, per_rack: int) -> list[dict[str, Any]]:
    nodes = []
    for r in range(racks):
        for i in range(per_rack):
            name = f"{namespace}-r{r}-n{i}"
            node = node_object(SHAPE, Host(name, ((RACK, f"r{r}"), (POOL, namespace))))
            node["spec"]["taints"] = [{"key": POOL, "value": namespace, "effect": "NoSchedule"}]
            nodes.append(node)
    return nodes


def pool_topology(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "NetworkTopology",
        "metadata": {"name": namespace},
        "spec": {"levels": [{"name": "rack", "nodeLabels": [RACK]},
                            {"name": "host", "nodeLabels": ["kubernetes.io/hostname"]}]},
    }


def member(name: str, group: str, namespace: str, owner: dict[str, Any]) -> dict[str, Any]:
    body = pod(name, group, gpus=8, owner=owner)
    body["spec"]["nodeSelector"] = {POOL: namespace}
    body["spec"]["tolerations"].append({"key": POOL, "operator": "Exists"})
    return body


@pytest.fixture
async def pool(cluster: LocalCluster, namespace: str) -> AsyncIterator[dict[str, Any]]:
    """Two racks of three 8-GPU nodes and an owner (a ConfigMap: it exists, so a garbage
    collector leaves its pods alone) that counts as the pods' controller."""
    nodes = pool_nodes(namespace, racks=2, per_rack=3)
    rest = cluster.rest(timeout=30.0)
    for node in nodes:
        assert rest.post("/api/v1/nodes", node).status == 201
    await asyncio.to_thread(cluster.apply, [pool_topology(namespace)])
    owner_body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}
    created = rest.post(f"/api/v1/namespaces/{namespace}/configmaps", owner_body).body
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
             "uid": created["metadata"]["uid"], "controller": True}

    async def ready() -> bool:
        listed = (await kubectl_json(cluster, "get", "nodes", "-l", f"{POOL}={namespace}"))
        return sum(1 for n in listed["items"] for c in n["status"].get("conditions", [])
                   if c["type"] == "Ready" and c["status"] == "True") == len(nodes)

    await eventually(ready)
    yield {"owner": owner, "nodes": [n["metadata"]["name"] for n in nodes]}
    cluster.kubectl("delete", "pods", "--all", "-n", namespace, "--force", "--grace-period=0",
                    check=False)
    for node in nodes:
        rest.request("DELETE", f"/api/v1/nodes/{node['metadata']['name']}")
    cluster.kubectl("delete", "networktopologies.scheduling.phalanx.io", namespace,
                    "--ignore-not-found", check=False)


def fail_node(cluster: LocalCluster, node: str, how: str) -> None:
    """Make `node` fail, then evict its pods as the node lifecycle controller / pod GC would."""
    if how == "NotReady":
        status = {"status": {"conditions": [{"type": "Ready", "status": "False",
                                             "reason": "NodeStatusUnknown",
                                             "message": "Kubelet stopped posting node status."}]}}
        cluster.kubectl("patch", "node", node, "--subresource=status", "--type=strategic",
                        "-p", json.dumps(status))
        # The node lifecycle controller taints a NotReady node (kwok may report it Ready
        # again before the operator looks; the taints stay). Pods tolerate the NoExecute one
        # for 300 s (DefaultTolerationSeconds), not the NoSchedule one.
        for effect in ("NoSchedule", "NoExecute"):
            cluster.kubectl("taint", "node", node, f"node.kubernetes.io/not-ready:{effect}")
    elif how == "NoExecute":  # what an admin sets on a node that is shut down for good
        cluster.kubectl("taint", "node", node, "node.kubernetes.io/out-of-service:NoExecute")
    else:
        cluster.kubectl("delete", "node", node)
    cluster.kubectl("delete", "pods", "-A", "--field-selector", f"spec.nodeName={node}",
                    "--force", "--grace-period=0")


def rack_of(node: str) -> str:
    return node.split("-")[-2]


async def events_of(cluster: LocalCluster, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = await kubectl_json(cluster, "get", "events", "-n", namespace, "--field-selector",
                                f"involvedObject.name={name}")
    return list(listed["items"])


@pytest.mark.parametrize("how", FAILURES)
async def test_a_replacement_joins_the_gang_in_its_rack_and_the_failed_node_is_named(
    phalanx: Operator, cluster: LocalCluster, namespace: str, pool: dict[str, Any], how: str
) -> None:
    topology = {"networkTopology": namespace, "required": "rack"}
    objects = [podgroup("train", 2, topology=topology),
               *(member(f"train-{i}", "train", namespace, pool["owner"]) for i in range(2))]
    await apply(cluster, objects, namespace)

    async def placed() -> dict[str, str]:
        pods = await pods_in(cluster, namespace)
        nodes = {n: p["spec"].get("nodeName") for n, p in pods.items()}
        return nodes if all(nodes.values()) and len(nodes) == 2 else {}

    first = await eventually(placed)
    rack = rack_of(first["train-0"])
    assert rack_of(first["train-1"]) == rack  # required: rack
    failed = first["train-1"]
    await asyncio.to_thread(fail_node, cluster, failed, how)
    await apply(cluster, [member("train-1b", "train", namespace, pool["owner"])], namespace)

    async def replaced() -> str:
        pods = await pods_in(cluster, namespace)
        return str(pods.get("train-1b", {}).get("spec", {}).get("nodeName") or "")

    node = await eventually(replaced)
    assert node != failed and rack_of(node) == rack  # same rack: it had room

    async def running() -> bool:
        group = await group_of(cluster, namespace, "train")
        return bool(group["status"].get("phase") == "Running")

    await eventually(running)  # whole again

    async def named() -> list[str]:
        return [e["message"] for e in await events_of(cluster, namespace, "train")
                if e["reason"] == "NodeFailed" and failed in e["message"]]

    (message,) = await eventually(named)
    assert "of this gang failed" in message, message


@pytest.mark.parametrize("how", FAILURES)
async def test_a_gang_that_cannot_be_made_whole_is_released_and_says_why(
    phalanx: Operator, cluster: LocalCluster, namespace: str, pool: dict[str, Any], how: str
) -> None:
    topology = {"networkTopology": namespace, "required": "rack"}
    objects = [podgroup("full", 3, topology=topology, scheduleTimeoutSeconds=1),
               *(member(f"full-{i}", "full", namespace, pool["owner"]) for i in range(3))]
    await apply(cluster, objects, namespace)

    async def placed() -> dict[str, str]:
        pods = await pods_in(cluster, namespace)
        nodes = {n: p["spec"].get("nodeName") for n, p in pods.items()}
        return nodes if all(nodes.values()) and len(nodes) == 3 else {}

    first = await eventually(placed)
    assert len({rack_of(n) for n in first.values()}) == 1  # the whole rack
    failed = first["full-2"]
    await asyncio.to_thread(fail_node, cluster, failed, how)
    await apply(cluster, [member("full-2b", "full", namespace, pool["owner"])], namespace)

    async def released() -> list[str]:
        return [e["message"] for e in await events_of(cluster, namespace, "full")
                if e["reason"] == "PartialGangReleased"]

    (message,) = await eventually(released)
    assert failed in message, message  # says which node the gang lost

    async def survivors_gone() -> bool:
        pods = await pods_in(cluster, namespace)
        return not any(p["spec"].get("nodeName") for p in pods.values())

    await eventually(survivors_gone)  # their GPUs do not sit idle


@pytest.fixture
def avoiding_rack(ready_nodes: LocalCluster) -> Iterator[Operator]:
    """The operator with `avoid_not_ready_level: rack`."""
    settings = FAST.model_copy(update={"avoid_not_ready_level": "rack"})

    async def make() -> Operator:
        return Operator(await load_configuration(str(ready_nodes.kubeconfig)), settings)

    with operator_in_thread(make, "phalanx-avoiding") as operator:
        yield operator
    assert operator.loop.errors == 0


async def test_with_the_setting_a_new_gang_keeps_out_of_a_rack_with_a_not_ready_node(
    avoiding_rack: Operator, cluster: LocalCluster, namespace: str, pool: dict[str, Any]
) -> None:
    """Rack r0 gets a NotReady node (not played by kwok, so it stays NotReady), rack r1 a
    fourth Ready one: the tightest rack for a 3-pod gang is r0, which the setting rules out."""
    down, spare = pool_nodes(namespace, racks=2, per_rack=4)[3::4]
    down["metadata"]["annotations"].pop(labels.KWOK_NODE_ANNOTATION)
    down["status"]["conditions"] = [{"type": "Ready", "status": "False",
                                     "reason": "NodeStatusUnknown", "message": "test"}]
    rest = cluster.rest(timeout=30.0)
    try:
        for node in (down, spare):
            assert rest.post("/api/v1/nodes", node).status == 201

        async def seen() -> bool:  # the operator's NetworkTopology status counts them
            listed = await kubectl_json(cluster, "get", "networktopologies.scheduling.phalanx.io",
                                        namespace)
            rows = (listed.get("status") or {}).get("tree") or []
            racks = {row["name"]: row["nodes"] for row in rows if row["level"] == "rack"}
            return (racks.get("r0"), racks.get("r1")) == (4, 4)

        await eventually(seen)
        topology = {"networkTopology": namespace, "required": "rack"}
        objects = [podgroup("new", 3, topology=topology),
                   *(member(f"new-{i}", "new", namespace, pool["owner"]) for i in range(3))]
        await apply(cluster, objects, namespace)

        async def placed() -> set[str]:
            pods = await pods_in(cluster, namespace)
            nodes = [p["spec"].get("nodeName") for p in pods.values()]
            return {rack_of(n) for n in nodes} if len(nodes) == 3 and all(nodes) else set()

        assert await eventually(placed) == {"r1"}
    finally:
        for node in (down, spare):
            rest.request("DELETE", f"/api/v1/nodes/{node['metadata']['name']}")
