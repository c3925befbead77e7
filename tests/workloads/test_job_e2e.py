"""A queue-labelled batch/v1 Job on the real control plane (kube-controller-manager's Job
controller makes the pods): Phalanx creates its PodGroup, starts its pods all together
inside the required rack or not at all, reports on that PodGroup, and everything goes
with the Job."""

from __future__ import annotations

import json
from typing import Any

import pytest
from gang_checks import (
    apply_example,
    bound,
    condition,
    event_reasons,
    goes_with_its_workload,
    gpu_template,
    phalanx_group,
    pods,
    racks,
    starts_no_pod,
    starts_whole_in_one_rack,
)

from phalanx.cluster import LocalCluster
from phalanx.operator.main import Operator
from polling import eventually, get_json, gone

pytestmark = pytest.mark.e2e

JOB_PODS = "batch.kubernetes.io/job-name=train"


def queue_job(parallelism: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "train",
            "labels": {"scheduling.phalanx.io/queue": "default"},
            "annotations": {"scheduling.phalanx.io/topology-required": "rack"},
        },
        "spec": {"parallelism": parallelism, "backoffLimit": 0, "template": gpu_template()},
    }


def group(cluster: LocalCluster, namespace: str) -> dict[str, Any]:
    return phalanx_group(cluster, namespace, "job-train")


def test_a_queue_labelled_job_is_one_gang_inside_a_rack_and_goes_with_the_job(
    cluster: LocalCluster, namespace: str, phalanx: Operator
) -> None:
    cluster.apply([queue_job(parallelism=5)], namespace=namespace)  # 40 GPUs; a rack has 32
    job = get_json(cluster, "job", "train", "-n", namespace)

    def refused() -> dict[str, Any]:
        pg = group(cluster, namespace)
        said = condition(pg, "Unschedulable")
        return pg if said.get("reason") == "NoDomainFits" else {}

    pg = eventually(refused)
    assert pg, group(cluster, namespace)
    [owner] = pg["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("Job", job["metadata"]["uid"])
    assert pg["spec"]["minMember"] == 5 and pg["spec"]["topology"]["required"] == "rack"
    assert len(pods(cluster, namespace, JOB_PODS)) == 5
    assert bound(pods(cluster, namespace, JOB_PODS)) == []  # 4 would fit: none starts
    assert "NoDomainFits" in event_reasons(cluster, namespace, "PodGroup", "job-train")

    patch = json.dumps({"spec": {"parallelism": 4}})
    cluster.kubectl("patch", "job", "train", "-n", namespace, "--type=merge", "-p", patch)
    placed = eventually(lambda: len(bound(pods(cluster, namespace, JOB_PODS))) == 4, 90)
    assert placed, pods(cluster, namespace, JOB_PODS)
    nodes = bound(pods(cluster, namespace, JOB_PODS))
    assert len(set(nodes)) == 4 and len(racks(cluster, nodes)) == 1
    assert group(cluster, namespace)["spec"]["minMember"] == 4
    assert eventually(
        lambda: condition(group(cluster, namespace), "Scheduled").get("status") == "True"
    ), group(cluster, namespace)

    cluster.kubectl("delete", "job", "train", "-n", namespace, "--wait=false")
    assert eventually(lambda: gone(cluster, "pg", "job-train", "-n", namespace), 90)
    assert eventually(lambda: not pods(cluster, namespace, JOB_PODS), 90)


def test_a_job_without_the_queue_label_gets_no_gang(
    cluster: LocalCluster, namespace: str, phalanx: Operator
) -> None:
    job = queue_job(parallelism=2)
    job["metadata"]["labels"] = {}
    cluster.apply([job], namespace=namespace)
    assert eventually(lambda: len(bound(pods(cluster, namespace, JOB_PODS))) == 2, 60)
    assert gone(cluster, "pg", "-n", namespace)  # pods placed one by one, no PodGroup


def test_the_job_demo_runs_as_one_gang_in_a_rack(
    cluster: LocalCluster, namespace: str, phalanx: Operator
) -> None:
    apply_example(cluster, namespace, "job.yaml")
    starts_whole_in_one_rack(cluster, namespace, "job-train", JOB_PODS, 4)
    goes_with_its_workload(cluster, namespace, "job", "train", ["job-train"], JOB_PODS)


def test_kueues_required_topology_on_the_pod_template_holds_the_gang_to_one_rack(
    cluster: LocalCluster, namespace: str, phalanx: Operator
) -> None:
    job = queue_job(parallelism=5)  # 5 whole nodes: the cluster has room, a rack has not
    job["metadata"]["annotations"] = {}
    job["spec"]["template"]["metadata"]["annotations"] = {
        "kueue.x-k8s.io/podset-required-topology": "network.topology.nvidia.com/leaf"
    }
    cluster.apply([job], namespace=namespace)
    starts_no_pod(cluster, namespace, "job-train", JOB_PODS, 5)
    topology = get_json(cluster, "pg", "job-train", "-n", namespace)["spec"]["topology"]
    assert topology["requiredNodeLabel"] == "network.topology.nvidia.com/leaf"
