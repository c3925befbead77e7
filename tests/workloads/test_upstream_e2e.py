"""Kubernetes' own gangs (Workload API: scheduling.k8s.io/v1beta1 on 1.37, v1alpha2 on 1.36,
whichever the cluster serves) on a cluster that serves them: Phalanx places them all or
nothing, inside the level their topology key names, and reports on the upstream PodGroup's
scheduling condition as kube-scheduler does; a Job's Workload and PodGroup (made by the Job
controller) too. `make test-upstream K8S_VERSION=v1.36.1` runs them on another release."""

from __future__ import annotations

from typing import Any

import pytest
from gang_checks import (
    LEAF,
    bound,
    condition,
    event_reasons,
    gpu_template,
    pods,
    racks,
)

from phalanx.cluster import LocalCluster
from phalanx.operator.main import Operator
from phalanx.operator.upstream_status import condition_type
from polling import eventually, get_json, gone

pytestmark = pytest.mark.e2e

UPSTREAM = "podgroups.scheduling.k8s.io"


def upstream_group(
    cluster: LocalCluster, name: str, min_count: int, key: str | None = LEAF
) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if key:
        spec["schedulingConstraints"] = {"topology": [{"key": key}]}
    return {"apiVersion": cluster.pod_group_version, "kind": "PodGroup",
            "metadata": {"name": name}, "spec": spec}


def members(group: str, count: int) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": f"{group}-{i}", "labels": {"gang": group}},
         "spec": {**gpu_template()["spec"], "schedulingGroup": {"podGroupName": group}}}
        for i in range(count)
    ]


def scheduled(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    group = get_json(cluster, UPSTREAM, name, "-n", namespace)
    return condition(group, condition_type(group))


def test_an_upstream_gang_starts_whole_inside_its_topology_key_or_not_at_all(
    workload_api_cluster: LocalCluster, upstream_namespace: str, phalanx_upstream: Operator
) -> None:
    cluster, namespace = workload_api_cluster, upstream_namespace
    cluster.apply([upstream_group(cluster, "wide", 5), *members("wide", 5)], namespace=namespace)
    cluster.apply([upstream_group(cluster, "quad", 4), *members("quad", 4)], namespace=namespace)

    placed = eventually(lambda: len(bound(pods(cluster, namespace, "gang=quad"))) == 4)
    assert placed, pods(cluster, namespace, "gang=quad")
    assert len(racks(cluster, bound(pods(cluster, namespace, "gang=quad")))) == 1
    said = eventually(lambda: scheduled(cluster, namespace, "quad").get("status") == "True")
    assert said, scheduled(cluster, namespace, "quad")
    assert scheduled(cluster, namespace, "quad")["reason"] == "Scheduled"

    refused = eventually(lambda: scheduled(cluster, namespace, "wide").get("status") == "False")
    assert refused, scheduled(cluster, namespace, "wide")
    assert scheduled(cluster, namespace, "wide")["reason"] == "Unschedulable"
    assert "rack" in scheduled(cluster, namespace, "wide")["message"]
    assert bound(pods(cluster, namespace, "gang=wide")) == []  # a rack holds 4 of the 5
    assert "NoDomainFits" in event_reasons(cluster, namespace, "PodGroup", "wide")
    assert gone(cluster, "pg", "-n", namespace)  # Phalanx made no PodGroup of its own

    cluster.kubectl("delete", "pods", "-l", "gang=quad", "-n", namespace, "--wait=false")
    cluster.kubectl("delete", UPSTREAM, "quad", "-n", namespace, "--wait=false")
    assert eventually(lambda: gone(cluster, UPSTREAM, "quad", "-n", namespace), 90)


def test_a_job_under_the_workload_api_is_placed_as_the_job_controllers_gang(
    workload_api_cluster: LocalCluster, upstream_namespace: str, phalanx_upstream: Operator
) -> None:
    cluster, namespace = workload_api_cluster, upstream_namespace

    def job(name: str, parallelism: int) -> dict[str, Any]:
        spec = {"parallelism": parallelism, "completions": parallelism,
                "completionMode": "Indexed", "backoffLimit": 0, "template": gpu_template()}
        if cluster.state.minor >= 37:  # 1.37: the gang the Job asks for (spec.scheduling)
            spec["scheduling"] = {"schedulingPolicy": {"gang": {"minCount": parallelism}}}
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                "spec": spec}

    cluster.apply([job("fits", 4)], namespace=namespace)
    selector = "batch.kubernetes.io/job-name=fits"
    assert eventually(lambda: len(bound(pods(cluster, namespace, selector))) == 4, 90)
    [pod] = pods(cluster, namespace, selector)[:1]
    group = pod["spec"]["schedulingGroup"]["podGroupName"]  # the Job controller's
    assert eventually(lambda: scheduled(cluster, namespace, group).get("status") == "True")
    assert len(racks(cluster, bound(pods(cluster, namespace, selector)))) == 1

    cluster.apply([job("too-big", 29)], namespace=namespace)  # 28 nodes are left free
    big = "batch.kubernetes.io/job-name=too-big"
    assert eventually(lambda: len(pods(cluster, namespace, big)) == 29, 90)
    [first] = pods(cluster, namespace, big)[:1]
    big_group = first["spec"]["schedulingGroup"]["podGroupName"]
    refused = eventually(
        lambda: scheduled(cluster, namespace, big_group).get("reason") == "Unschedulable", 90
    )
    assert refused, scheduled(cluster, namespace, big_group)
    assert bound(pods(cluster, namespace, big)) == []  # 28 would fit: none starts

    for name in ("fits", "too-big"):
        cluster.kubectl("delete", "job", name, "-n", namespace, "--wait=false")
    for name in (group, big_group):
        assert eventually(lambda name=name: gone(cluster, UPSTREAM, name, "-n", namespace), 90)
    assert eventually(lambda: not pods(cluster, namespace), 90)


def test_pg_and_the_full_name_reach_phalanx_podgroups_when_the_built_in_kind_is_served(
    workload_api_cluster: LocalCluster, upstream_namespace: str
) -> None:
    cluster, namespace = workload_api_cluster, upstream_namespace
    ours = {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "ours"}, "spec": {"minMember": 1}}
    cluster.apply([ours, upstream_group(cluster, "theirs", 1)], namespace=namespace)
    for spelling in ("pg", "podgroups.scheduling.phalanx.io"):
        listed = get_json(cluster, spelling, "-n", namespace)["items"]
        assert [i["metadata"]["name"] for i in listed] == ["ours"], spelling
    listed = get_json(cluster, "podgroups", "-n", namespace)["items"]
    assert [i["metadata"]["name"] for i in listed] == ["theirs"]


def test_a_basic_podgroup_places_its_pods_one_by_one_inside_its_topology_key(
    workload_api_cluster: LocalCluster, upstream_namespace: str, phalanx_upstream: Operator
) -> None:
    cluster, namespace = workload_api_cluster, upstream_namespace
    basic = upstream_group(cluster, "loose", 1)
    basic["spec"]["schedulingPolicy"] = {"basic": {}}
    cluster.apply([basic, *members("loose", 5)], namespace=namespace)  # a rack holds 4
    assert eventually(lambda: len(bound(pods(cluster, namespace, "gang=loose"))) == 4, 90)
    assert len(racks(cluster, bound(pods(cluster, namespace, "gang=loose")))) == 1
    assert len(pods(cluster, namespace, "gang=loose")) == 5  # the fifth waits, alone


def test_a_partly_placed_upstream_gang_is_released_past_its_timeout_and_says_so(
    workload_api_cluster: LocalCluster, upstream_namespace: str, phalanx_upstream: Operator
) -> None:
    """Two of three pods already on nodes (as when the rest of a gang's bindings failed)
    and the third fits no node: past the deadline the two are deleted so their controller
    starts the gang again whole, and Kubernetes' PodGroup says so as Phalanx's would."""
    cluster, namespace = workload_api_cluster, upstream_namespace
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}
    cluster.apply([owner], namespace=namespace)
    uid = get_json(cluster, "configmap", "owner", "-n", namespace)["metadata"]["uid"]
    group = upstream_group(cluster, "part", 3, key=None)
    group["metadata"]["annotations"] = {"scheduling.phalanx.io/schedule-timeout-seconds": "1"}
    first, second, third = members("part", 3)
    nodes = sorted(n["metadata"]["name"] for n in get_json(cluster, "nodes")["items"])[-2:]
    for pod, node in ((first, nodes[0]), (second, nodes[1])):
        pod["spec"]["nodeName"] = node
    third["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "16"}}
    for pod in (first, second, third):
        pod["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid,
             "controller": True}]
    cluster.apply([group, first, second, third], namespace=namespace)

    def released() -> list[str]:
        return [e["message"] for e in get_json(cluster, "events", "-n", namespace)["items"]
                if e["reason"] == "PartialGangReleased"
                and e["involvedObject"].get("apiVersion") == cluster.pod_group_version
                and e["involvedObject"].get("name") == "part"]

    [message] = eventually(released, 90) or [get_json(cluster, "events", "-n", namespace)]
    assert "2 of 3 pods were placed" in message and "deleted the placed pods" in message
    assert eventually(lambda: bound(pods(cluster, namespace, "gang=part")) == [], 60)
    said = scheduled(cluster, namespace, "part")  # then waiting again, past its timeout
    assert (said.get("status"), said.get("reason")) == ("False", "Unschedulable"), said
