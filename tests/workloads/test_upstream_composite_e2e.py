"""Kubernetes 1.37's CompositePodGroup on a real control plane: two PodGroups, each
required inside a rack, the whole inside one block, are placed as one unit (both children
in two racks of one block) or not at all, and the composite says so on its own condition."""

from __future__ import annotations

from typing import Any

import pytest
from gang_checks import LEAF, bound, condition, gpu_template, pods

from phalanx.cluster import LocalCluster
from phalanx.operator.main import Operator
from polling import eventually, get_json

pytestmark = pytest.mark.e2e

SPINE = "network.topology.nvidia.com/spine"  # the small cluster's block label
COMPOSITES = "compositepodgroups.scheduling.k8s.io"


def composite(name: str, children: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
            "metadata": {"name": name},
            "spec": {"workloadRef": {"workloadName": name, "templateName": name},
                     "schedulingPolicy": {"gang": {"minGroupCount": children}},
                     "schedulingConstraints": {"topology": [{"key": SPINE}]}}}


def child(cluster: LocalCluster, name: str, parent: str, size: int) -> list[dict[str, Any]]:
    group = {"apiVersion": cluster.pod_group_version, "kind": "PodGroup",
             "metadata": {"name": name},
             "spec": {"parentCompositePodGroupName": parent,
                      "workloadRef": {"workloadName": parent, "templateName": name},
                      "schedulingPolicy": {"gang": {"minCount": size}},
                      "schedulingConstraints": {"topology": [{"key": LEAF}]}}}
    members = [{"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{name}-{i}", "labels": {"composite": parent}},
                "spec": {**gpu_template()["spec"], "schedulingGroup": {"podGroupName": name}}}
               for i in range(size)]
    return [group, *members]


def node_labels(cluster: LocalCluster) -> dict[str, dict[str, str]]:
    return {n["metadata"]["name"]: n["metadata"]["labels"]
            for n in get_json(cluster, "nodes")["items"]}


def test_two_children_land_in_two_racks_of_one_block_or_not_at_all(
    workload_api_cluster: LocalCluster, upstream_namespace: str, phalanx_upstream: Operator
) -> None:
    cluster, namespace = workload_api_cluster, upstream_namespace
    cluster.apply([composite("pair", 2), *child(cluster, "pair-a", "pair", 4),
                   *child(cluster, "pair-b", "pair", 4)], namespace=namespace)
    assert eventually(lambda: len(bound(pods(cluster, namespace, "composite=pair"))) == 8, 90)
    labels = node_labels(cluster)
    where = {p["metadata"]["name"]: labels[p["spec"]["nodeName"]]
             for p in pods(cluster, namespace, "composite=pair")}
    racks = {name: {lb[LEAF] for n, lb in where.items() if n.startswith(f"{name}-")}
             for name in ("pair-a", "pair-b")}
    assert all(len(r) == 1 for r in racks.values()) and racks["pair-a"] != racks["pair-b"]
    assert len({lb[SPINE] for lb in where.values()}) == 1  # one block
    said = eventually(lambda: condition(get_json(cluster, COMPOSITES, "pair", "-n", namespace),
                                        "CompositePodGroupInitiallyScheduled").get("status"))
    assert said == "True"

    # five children of four pods: a block holds four racks, so none of them starts
    many = [composite("five", 5)]
    for i in range(5):
        many += child(cluster, f"five-{i}", "five", 4)
    cluster.apply(many, namespace=namespace)
    assert eventually(lambda: condition(get_json(cluster, COMPOSITES, "five", "-n", namespace),
                                        "CompositePodGroupInitiallyScheduled").get("reason")
                      == "Unschedulable", 90)
    assert bound(pods(cluster, namespace, "composite=five")) == []
