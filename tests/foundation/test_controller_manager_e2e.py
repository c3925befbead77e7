"""kube-controller-manager on the local cluster: workloads make their pods, deletion cleans
up as on a real cluster (Job, ReplicaSet, garbage collector, namespace controllers)."""

from __future__ import annotations

import secrets

import pytest

from kube_objects import job, replica_set
from phalanx.cluster import LocalCluster
from polling import eventually, get_json, gone, names

pytestmark = pytest.mark.e2e

JOB_PODS = "batch.kubernetes.io/job-name={}"


def pod_phases(cluster: LocalCluster, namespace: str, selector: str) -> dict[str, str]:
    pods = get_json(cluster, "pods", "-n", namespace, "-l", selector)["items"]
    return {pod["metadata"]["name"]: pod["status"].get("phase", "") for pod in pods}


def running(cluster: LocalCluster, namespace: str, selector: str, count: int) -> list[str]:
    """Names of `count` Running pods, once there are exactly that many pods and all run."""
    phases = pod_phases(cluster, namespace, selector)
    return sorted(phases) if len(phases) == count and set(phases.values()) == {"Running"} else []


def test_a_job_runs_its_pods_to_completion(
    cluster: LocalCluster, namespace: str, kube_scheduler: int
) -> None:
    cluster.apply([job("train", parallelism=3, complete_after=1)], namespace=namespace)
    cluster.kubectl("wait", "-n", namespace, "job/train", "--for=condition=Complete",
                    "--timeout=120s", timeout=150)
    status = get_json(cluster, "job", "train", "-n", namespace)["status"]
    assert status["succeeded"] == 3 and "failed" not in status
    pods = get_json(cluster, "pods", "-n", namespace, "-l", JOB_PODS.format("train"))["items"]
    assert len(pods) == 3
    assert all(pod["status"]["phase"] == "Succeeded" and pod["spec"]["nodeName"] for pod in pods)


def test_deleting_a_job_garbage_collects_its_pods(
    cluster: LocalCluster, namespace: str, kube_scheduler: int
) -> None:
    cluster.apply([job("serve", parallelism=2)], namespace=namespace)
    selector = JOB_PODS.format("serve")
    assert eventually(lambda: running(cluster, namespace, selector, 2))
    cluster.kubectl("delete", "job", "serve", "-n", namespace, "--wait=false")  # background
    assert eventually(lambda: gone(cluster, "pods", "-n", namespace, "-l", selector))


def test_a_replica_set_replaces_a_deleted_pod_and_its_pods_go_with_it(
    cluster: LocalCluster, namespace: str, kube_scheduler: int
) -> None:
    cluster.apply([replica_set("web", replicas=2)], namespace=namespace)
    first = eventually(lambda: running(cluster, namespace, "app=web", 2))
    assert len(first) == 2
    cluster.kubectl("delete", "pod", first[0], "-n", namespace, "--wait=false")
    second = eventually(
        lambda: (found := running(cluster, namespace, "app=web", 2)) and first[0] not in found
        and found
    )
    assert second and first[1] in second
    cluster.kubectl("delete", "replicaset", "web", "-n", namespace, "--wait=false")
    assert eventually(lambda: gone(cluster, "pods", "-n", namespace, "-l", "app=web"))


def test_deleting_a_namespace_removes_it_and_everything_in_it(
    cluster: LocalCluster, kube_scheduler: int
) -> None:
    namespace = f"t-{secrets.token_hex(4)}"
    cluster.kubectl("create", "namespace", namespace)
    try:
        cluster.apply([job("work", parallelism=2)], namespace=namespace)
        cluster.kubectl("create", "configmap", "settings", "-n", namespace, "--from-literal=a=b")
        cluster.apply([{"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
                        "metadata": {"name": "gang"}, "spec": {"minMember": 2}}],
                      namespace=namespace)
        assert eventually(lambda: running(cluster, namespace, JOB_PODS.format("work"), 2))
        assert eventually(lambda: "default" in names(cluster, "serviceaccounts", "-n", namespace))
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--wait=false")
    assert eventually(lambda: gone(cluster, "namespace", namespace), timeout=120)
    # A namespace of the same name starts empty: nothing of the old one survived.
    cluster.kubectl("create", "namespace", namespace)
    try:
        leftovers = names(cluster, "pods,jobs,configmaps,podgroups.scheduling.phalanx.io",
                          "-n", namespace)
        assert [name for name in leftovers if name != "kube-root-ca.crt"] == []
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--wait=false")
