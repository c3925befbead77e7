"""The real workload controllers on the local cluster: a JobSet, a LeaderWorkerSet and a
Kubeflow TrainJob get their pods created (by the controller, through Jobs or StatefulSets of
kube-controller-manager), bound by kube-scheduler and run by kwok; deleting the workload
deletes everything it made."""

from __future__ import annotations

from typing import Any

import pytest

from kube_objects import jobset, leader_worker_set, train_job
from phalanx.cluster import LocalCluster
from phalanx.cluster.workload_controllers import Running
from polling import eventually, get_json, gone

pytestmark = pytest.mark.e2e

JOBSET_PODS = "jobset.sigs.k8s.io/jobset-name={}"
LWS_PODS = "leaderworkerset.sigs.k8s.io/name={}"


def running_pods(cluster: LocalCluster, namespace: str, selector: str, count: int) -> Any:
    """The pods, once exactly `count` exist and all are Running on a node."""
    pods = get_json(cluster, "pods", "-n", namespace, "-l", selector)["items"]
    if len(pods) != count:
        return []
    if all(pod["status"].get("phase") == "Running" and pod["spec"].get("nodeName")
           for pod in pods):
        return pods
    return []


def test_a_jobset_runs_its_pods_and_deletion_cleans_up(
    cluster: LocalCluster, namespace: str, jobset_controller: Running, kube_scheduler: int
) -> None:
    cluster.apply([jobset("js", replicas=2, parallelism=2)], namespace=namespace)
    selector = JOBSET_PODS.format("js")
    pods = eventually(lambda: running_pods(cluster, namespace, selector, 4), timeout=120)
    assert len(pods) == 4
    jobs = {pod["metadata"]["labels"]["job-name"] for pod in pods}
    assert jobs == {"js-workers-0", "js-workers-1"}  # two Jobs of two pods, made by JobSet
    cluster.kubectl("delete", "jobset", "js", "-n", namespace, "--wait=false")
    assert eventually(lambda: gone(cluster, "jobs,pods", "-n", namespace, "-l", selector),
                      timeout=120)


def test_jobset_webhooks_are_served_on_loopback(
    cluster: LocalCluster, namespace: str, jobset_controller: Running
) -> None:
    """JobSet's validating webhook (not the CRD schema) refuses a success policy that names
    a replicated job the JobSet lacks: the API server reached the webhook on 127.0.0.1."""
    bad = jobset("bad", replicas=1, parallelism=1)
    bad["spec"]["successPolicy"] = {"operator": "All", "targetReplicatedJobs": ["nope"]}
    refused = cluster.apply([bad], namespace=namespace, check=False)
    assert refused.returncode != 0
    assert 'admission webhook "vjobset.kb.io" denied the request' in refused.stderr
    assert "'nope' does not appear" in refused.stderr


def test_a_leader_worker_set_runs_its_groups_and_deletion_cleans_up(
    cluster: LocalCluster, namespace: str, lws_controller: Running, kube_scheduler: int
) -> None:
    cluster.apply([leader_worker_set("lws", replicas=2, size=3)], namespace=namespace)
    selector = LWS_PODS.format("lws")
    pods = eventually(lambda: running_pods(cluster, namespace, selector, 6), timeout=120)
    assert len(pods) == 6
    groups = {pod["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/group-index"]
              for pod in pods}
    assert groups == {"0", "1"}
    cluster.kubectl("delete", "leaderworkerset", "lws", "-n", namespace, "--wait=false")
    assert eventually(
        lambda: gone(cluster, "statefulsets,pods", "-n", namespace, "-l", selector),
        timeout=120,
    )


def test_a_train_job_runs_its_nodes_and_deletion_cleans_up(
    cluster: LocalCluster, namespace: str, kubeflow_controller: Running, kube_scheduler: int
) -> None:
    cluster.apply([train_job("tj", nodes=2)], namespace=namespace)
    selector = JOBSET_PODS.format("tj")  # a TrainJob runs as the JobSet of its name
    pods = eventually(lambda: running_pods(cluster, namespace, selector, 2), timeout=120)
    assert len(pods) == 2
    assert get_json(cluster, "jobset", "tj", "-n", namespace)["metadata"]["ownerReferences"][0][
        "kind"] == "TrainJob"
    cluster.kubectl("delete", "trainjob", "tj", "-n", namespace, "--wait=false")
    assert eventually(lambda: gone(cluster, "jobsets,jobs,pods", "-n", namespace, "-l", selector)
                      and gone(cluster, "jobset", "tj", "-n", namespace), timeout=120)
