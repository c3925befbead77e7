"""The Workload API option: Kubernetes' scheduling.k8s.io PodGroups served (v1beta1 on 1.37,
v1alpha2 on 1.36), and the
gates on kube-controller-manager and kube-scheduler at work (the Job controller makes a
Workload and a PodGroup for a gang-able Job; kube-scheduler's gang plugin places it)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from kube_objects import job
from phalanx.cluster import LocalCluster
from polling import eventually, get_json, gone

pytestmark = pytest.mark.e2e



@pytest.fixture
def upstream_namespace(workload_api_cluster: LocalCluster) -> Iterator[str]:
    name = f"t-{secrets.token_hex(4)}"
    workload_api_cluster.kubectl("create", "namespace", name)
    yield name
    workload_api_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def scheduling_resources(cluster: LocalCluster) -> set[tuple[str, str]]:
    listed = cluster.kubectl("api-resources", "--api-group=scheduling.k8s.io", "--no-headers")
    # NAME [SHORTNAMES] APIVERSION NAMESPACED KIND
    return {(line.split()[0], line.split()[-3]) for line in listed.stdout.splitlines()}


def test_the_workload_api_is_served_only_when_asked_for(
    workload_api_cluster: LocalCluster, cluster: LocalCluster
) -> None:
    version = workload_api_cluster.pod_group_version
    upstream = {("workloads", version), ("podgroups", version)}
    assert upstream <= scheduling_resources(workload_api_cluster)
    assert not upstream & scheduling_resources(cluster)


def test_podgroups_means_the_built_in_kind_and_pg_means_phalanx(
    workload_api_cluster: LocalCluster, upstream_namespace: str
) -> None:
    workload_api_cluster.apply(
        [{"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
          "metadata": {"name": "ours"}, "spec": {"minMember": 2}}],
        namespace=upstream_namespace,
    )
    short = get_json(workload_api_cluster, "pg", "-n", upstream_namespace)["items"]
    assert [(pg["apiVersion"], pg["metadata"]["name"]) for pg in short] == [
        ("scheduling.phalanx.io/v1alpha1", "ours")
    ]
    plain = get_json(workload_api_cluster, "podgroups", "-n", upstream_namespace)["items"]
    assert plain == []  # the built-in kind, of which there is none here


def test_a_gang_able_job_gets_a_workload_and_pod_group_runs_and_is_cleaned_up(
    workload_api_cluster: LocalCluster, upstream_namespace: str, workload_api_kube_scheduler: int
) -> None:
    cluster, namespace = workload_api_cluster, upstream_namespace
    gang = job("gang", parallelism=3, complete_after=2, indexed=True)
    if cluster.state.minor >= 37:  # 1.37 makes a gang only of a Job that asks for one
        gang["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {"minCount": 3}}}
    cluster.apply([gang], namespace=namespace)
    cluster.kubectl("wait", "-n", namespace, "job/gang", "--for=condition=Complete",
                    "--timeout=120s", timeout=150)
    job_uid = get_json(cluster, "job", "gang", "-n", namespace)["metadata"]["uid"]
    workloads = get_json(cluster, "workloads.scheduling.k8s.io", "-n", namespace)["items"]
    groups = get_json(cluster, "podgroups.scheduling.k8s.io", "-n", namespace)["items"]
    assert len(workloads) == 1 and len(groups) == 1
    group = groups[0]
    assert {ref["uid"] for ref in group["metadata"]["ownerReferences"]} >= {job_uid}
    assert group["spec"]["schedulingPolicy"]["gang"]["minCount"] == 3
    pods = get_json(cluster, "pods", "-n", namespace, "-l", "batch.kubernetes.io/job-name=gang")
    assert len(pods["items"]) == 3
    for pod in pods["items"]:
        assert pod["spec"]["schedulingGroup"]["podGroupName"] == group["metadata"]["name"]
        assert pod["status"]["phase"] == "Succeeded" and pod["spec"]["nodeName"]
    cluster.kubectl("delete", "job", "gang", "-n", namespace, "--wait=false")
    for kind in ("pods", "workloads.scheduling.k8s.io", "podgroups.scheduling.k8s.io"):
        assert eventually(lambda kind=kind: gone(cluster, kind, "-n", namespace)), kind
