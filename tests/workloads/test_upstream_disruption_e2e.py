"""Kubernetes 1.37's PodGroup fields on a real control plane: disruptionMode Single against
All when a node of a running group is lost (one pod replaced, against the whole group
placed again), and a high-priority group with preemptionPolicy Never, which preempts
nothing. The groups run on a pool of this test's own nodes (tainted so no other test's
pods land there); the test plays the node lifecycle controller and the pods' controller
(it deletes the failed node's pods and creates the replacements)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from gang_checks import bound, event_reasons, gpu_template, pods

from phalanx.cluster import LocalCluster
from phalanx.cluster.description import Host, NodeShape, node_object
from phalanx.operator.main import Operator
from polling import eventually, get_json

pytestmark = pytest.mark.e2e

POOL = "test.phalanx.io/pool"
UPSTREAM = "podgroups.scheduling.k8s.io"


@pytest.fixture
def pool(workload_api_cluster: LocalCluster, upstream_namespace: str) -> Iterator[list[str]]:
    """Three 8-GPU nodes only this test's pods tolerate."""
    names = [f"{upstream_namespace}-n{i}" for i in range(3)]
    nodes = []
    for name in names:
        node = node_object(NodeShape(), Host(name, ((POOL, upstream_namespace),)))
        node["spec"]["taints"] = [{"key": POOL, "value": upstream_namespace,
                                   "effect": "NoSchedule"}]
        nodes.append(node)
    workload_api_cluster.apply(nodes)
    yield names
    workload_api_cluster.kubectl("delete", "node", *names, "--ignore-not-found", check=False)


def owner_of(cluster: LocalCluster, namespace: str) -> dict[str, Any]:
    """A ConfigMap the pods name as their controller, so a release may delete them."""
    cluster.apply([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}],
                  namespace=namespace)
    uid = get_json(cluster, "configmap", "owner", "-n", namespace)["metadata"]["uid"]
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid,
            "controller": True}


def group(cluster: LocalCluster, name: str, size: int, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": cluster.pod_group_version, "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"schedulingPolicy": {"gang": {"minCount": size}}, **spec}}


def member(name: str, group_name: str, namespace: str, owner: dict[str, Any],
           **spec: Any) -> dict[str, Any]:  # fmt: skip
    template = gpu_template(
        {"gang": group_name}, schedulingGroup={"podGroupName": group_name},
        nodeSelector={POOL: namespace},
        tolerations=[{"key": POOL, "operator": "Exists"}], **spec)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "ownerReferences": [owner], **template["metadata"]},
            "spec": template["spec"]}


def lose_a_node(cluster: LocalCluster, namespace: str, mode: str) -> tuple[str, dict[str, str]]:
    """Start a group of two, delete the node of its second pod (and that pod, as the pod GC
    would), create the replacement; return the lost node and the first pod's uid/node."""
    owner = owner_of(cluster, namespace)
    objects = [group(cluster, "g", 2, disruptionMode={mode: {}}),
               member("g-0", "g", namespace, owner), member("g-1", "g", namespace, owner)]
    cluster.apply(objects, namespace=namespace)
    assert eventually(lambda: len(bound(pods(cluster, namespace, "gang=g"))) == 2, 90)
    first = get_json(cluster, "pod", "g-0", "-n", namespace)
    lost = get_json(cluster, "pod", "g-1", "-n", namespace)["spec"]["nodeName"]
    # the condition is what tells Phalanx the group ran whole
    assert eventually(lambda: "Scheduled" in event_reasons(cluster, namespace, "PodGroup", "g"))
    cluster.kubectl("delete", "node", lost)
    cluster.kubectl("delete", "pod", "g-1", "-n", namespace, "--force", "--grace-period=0")
    cluster.apply([member("g-1b", "g", namespace, owner)], namespace=namespace)
    return lost, {"uid": first["metadata"]["uid"], "node": first["spec"]["nodeName"]}


def test_single_replaces_the_lost_pod_alone(
    workload_api_cluster: LocalCluster, upstream_namespace: str, pool: list[str],
    phalanx_upstream: Operator,
) -> None:
    cluster, namespace = workload_api_cluster, upstream_namespace
    lost, first = lose_a_node(cluster, namespace, "single")

    def replacement() -> str:
        return str(get_json(cluster, "pod", "g-1b", "-n", namespace)["spec"].get("nodeName", ""))

    assert eventually(replacement, 90) not in ("", lost)
    still = get_json(cluster, "pod", "g-0", "-n", namespace)
    assert (still["metadata"]["uid"], still["spec"]["nodeName"]) == (first["uid"], first["node"])
    assert "PartialGangReleased" not in event_reasons(cluster, namespace, "PodGroup", "g")


def test_all_places_the_whole_group_again(
    workload_api_cluster: LocalCluster, upstream_namespace: str, pool: list[str],
    phalanx_upstream: Operator,
) -> None:
    cluster, namespace = workload_api_cluster, upstream_namespace
    lost, first = lose_a_node(cluster, namespace, "all")

    def released() -> list[str]:
        return [e["message"] for e in get_json(cluster, "events", "-n", namespace)["items"]
                if e["reason"] == "PartialGangReleased"
                and e["involvedObject"].get("name") == "g"]

    [message] = eventually(released, 90) or [get_json(cluster, "events", "-n", namespace)]
    assert "disruptionMode is All" in message, message
    assert eventually(lambda: "g-0" not in {p["metadata"]["name"]
                                            for p in pods(cluster, namespace, "gang=g")}, 60)
    assert bound(pods(cluster, namespace, "gang=g")) == []  # the replacement never went alone
    owner = owner_of(cluster, namespace)
    cluster.apply([member("g-0b", "g", namespace, owner)], namespace=namespace)  # recreated
    assert eventually(lambda: len(bound(pods(cluster, namespace, "gang=g"))) == 2, 90)
    assert lost not in bound(pods(cluster, namespace, "gang=g"))
    assert first["uid"] not in {p["metadata"]["uid"] for p in pods(cluster, namespace, "gang=g")}


def test_preemption_policy_never_preempts_nothing(
    workload_api_cluster: LocalCluster, upstream_namespace: str, pool: list[str],
    phalanx_upstream: Operator,
) -> None:
    cluster, namespace = workload_api_cluster, upstream_namespace
    owner = owner_of(cluster, namespace)
    # The API server sets a group's priority and preemptionPolicy from its class.
    high, never = f"{namespace}-high", f"{namespace}-never"
    cluster.apply([{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                    "metadata": {"name": name}, "value": 1000, "preemptionPolicy": policy}
                   for name, policy in ((high, "PreemptLowerPriority"), (never, "Never"))])
    low = [group(cluster, "low", 3),
           *(member(f"low-{i}", "low", namespace, owner) for i in range(3))]
    cluster.apply(low, namespace=namespace)
    assert eventually(lambda: len(bound(pods(cluster, namespace, "gang=low"))) == 3, 90)
    # 1.37.2 defaults an unset preemptionPolicy to PreemptLowerPriority before its priority
    # admission compares it with the class's, so a Never class must be repeated here
    polite = [group(cluster, "polite", 1, priorityClassName=never, preemptionPolicy="Never"),
              member("polite-0", "polite", namespace, owner)]
    cluster.apply(polite, namespace=namespace)
    assert eventually(lambda: "preemptionPolicy Never" in " ".join(
        e["message"] for e in get_json(cluster, "events", "-n", namespace)["items"]
        if e["involvedObject"].get("name") == "polite"), 90)
    assert len(bound(pods(cluster, namespace, "gang=low"))) == 3  # nothing evicted
    assert bound(pods(cluster, namespace, "gang=polite")) == []
    rude = [group(cluster, "rude", 1, priorityClassName=high),
            member("rude-0", "rude", namespace, owner)]
    cluster.apply(rude, namespace=namespace)  # the same without Never: it preempts
    assert eventually(lambda: len(bound(pods(cluster, namespace, "gang=rude"))) == 1, 90)
    spec = get_json(cluster, UPSTREAM, "polite", "-n", namespace)["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "Never")
    cluster.kubectl("delete", "priorityclass", high, never, check=False)
