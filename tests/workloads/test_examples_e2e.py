"""Every file of examples/workloads/ does on `make run`'s cluster what its comment says:
`kubectl apply` it, and its pods run as the gang(s) it names, each gang one PodGroup.

`make run` starts the real workload controllers with `workload_controllers.start`, as the
controller fixtures do, on a cluster like the session `cluster`; the Workload API files
need that cluster started with `--workload-api` (`workload_api_cluster`). All files of a
cluster are applied at once, into one namespace, next to each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from gang_checks import EXAMPLES, apply_example, racks

from phalanx.cluster import LocalCluster
from phalanx.cluster.workload_controllers import Running
from phalanx.operator.main import Operator
from phalanx.operator.upstream_status import condition_type
from polling import eventually, get_json

LWS = "leaderworkerset.sigs.k8s.io"

# file -> the Phalanx PodGroups it makes -> (the pods' selector, how many): as each says.
PHALANX_GANGS: dict[str, dict[str, tuple[str, int]]] = {
    "job.yaml": {"job-train": ("batch.kubernetes.io/job-name=train", 4)},
    "jobset.yaml": {"jobset-train": ("jobset.sigs.k8s.io/jobset-name=train", 5)},
    "leaderworkerset.yaml": {
        f"lws-serve-{i}": (f"{LWS}/name=serve,{LWS}/group-index={i}", 4) for i in (0, 1)
    },
    "pytorchjob.yaml": {"pytorchjob-ddp": ("training.kubeflow.org/job-name=ddp", 4)},
    "trainjob.yaml": {"trainjob-llm": ("jobset.sigs.k8s.io/jobset-name=llm", 4)},
    "raycluster.yaml": {"raycluster-ray": ("ray.io/cluster=ray", 5)},
    "mpijob.yaml": {"mpijob-allreduce": ("training.kubeflow.org/job-name=allreduce", 5)},
}
# file -> how many pods its Kubernetes PodGroup (Workload API) gangs, one PodGroup each.
# file -> the size of each of its Kubernetes PodGroups (the composite's two children)
UPSTREAM_GANGS: dict[str, list[int]] = {"podgroup-upstream.yaml": [2],
                                        "job-workload-api.yaml": [4],
                                        "compositepodgroup.yaml": [4, 4]}


def test_every_example_file_is_checked_here() -> None:
    on_disk = {path.name for path in (EXAMPLES / "workloads").glob("*.yaml")}
    assert on_disk == set(PHALANX_GANGS) | set(UPSTREAM_GANGS)


def running(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        p for p in items
        if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    ]


@pytest.mark.e2e
def test_the_workload_examples_run_as_their_gangs_on_make_runs_cluster(
    cluster: LocalCluster,
    namespace: str,
    jobset_controller: Running,
    lws_controller: Running,
    kubeflow_controller: Running,
    training_operator: Running,
    kuberay_controller: Running,
    mpi_operator: Running,
    phalanx: Operator,
) -> None:
    for name in PHALANX_GANGS:
        apply_example(cluster, namespace, name)
    wanted = {group: want for gangs in PHALANX_GANGS.values() for group, want in gangs.items()}

    def all_running() -> bool:
        groups = get_json(cluster, "pg", "-n", namespace)["items"]
        phases = {g["metadata"]["name"]: (g.get("status") or {}).get("phase") for g in groups}
        if phases != dict.fromkeys(wanted, "Running"):
            return False
        return all(
            len(running(get_json(cluster, "pods", "-n", namespace, "-l", selector)["items"]))
            == count
            for selector, count in wanted.values()
        )

    assert eventually(all_running, 180), (
        get_json(cluster, "pg", "-n", namespace)["items"],
        [(p["metadata"]["name"], p["status"].get("phase"))
         for p in get_json(cluster, "pods", "-n", namespace)["items"]],
    )
    for group, (selector, count) in wanted.items():  # each whole, inside one rack
        members = running(get_json(cluster, "pods", "-n", namespace, "-l", selector)["items"])
        assert len(members) == count, group
        assert len(racks(cluster, [p["spec"]["nodeName"] for p in members])) == 1, group


@pytest.mark.e2e
def test_the_workload_api_examples_run_as_kubernetes_gangs(
    workload_api_cluster: LocalCluster, upstream_namespace: str, phalanx_upstream: Operator
) -> None:
    cluster, namespace = workload_api_cluster, upstream_namespace
    for name in UPSTREAM_GANGS:
        apply_example(cluster, namespace, name)

    def members() -> dict[str, int]:
        pods = running(get_json(cluster, "pods", "-n", namespace)["items"])
        counted: dict[str, int] = {}
        for pod in pods:
            group = (pod["spec"].get("schedulingGroup") or {}).get("podGroupName", "")
            counted[group] = counted.get(group, 0) + 1
        return counted

    def scheduled() -> set[str]:
        groups = get_json(cluster, "podgroups.scheduling.k8s.io", "-n", namespace)["items"]
        return {
            g["metadata"]["name"] for g in groups
            for c in (g.get("status") or {}).get("conditions") or []
            if c["type"] == condition_type(g) and c["status"] == "True"
        }

    sizes = sorted(size for counts in UPSTREAM_GANGS.values() for size in counts)
    assert eventually(lambda: sorted(members().values()) == sizes, 120), members()
    assert eventually(lambda: scheduled() == set(members())), (scheduled(), members())
    assert get_json(cluster, "pg", "-n", namespace)["items"] == []  # no Phalanx PodGroup
    pair = [p for p in get_json(cluster, "pods", "-n", namespace)["items"]
            if p["metadata"]["name"].startswith("pair-")]
    assert len(racks(cluster, [p["spec"]["nodeName"] for p in pair])) == 1
