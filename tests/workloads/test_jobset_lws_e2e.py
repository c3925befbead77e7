"""A queue-labelled JobSet and LeaderWorkerSet run by their real controllers: Phalanx makes
their gangs (one for the JobSet's jobs, one per LWS group), starts each whole inside the
required rack or not at all, reports on its PodGroup, and all goes with the workload."""

from __future__ import annotations

from typing import Any

import pytest
from gang_checks import (
    apply_example,
    goes_with_its_workload,
    gpu_template,
    owned_by_workload,
    starts_no_pod,
    starts_whole_in_one_rack,
)

from phalanx.cluster import LocalCluster
from phalanx.cluster.workload_controllers import Running
from phalanx.operator.main import Operator
from polling import gone

pytestmark = pytest.mark.e2e

RACK = {"scheduling.phalanx.io/topology-required": "rack"}
QUEUE = {"scheduling.phalanx.io/queue": "default"}


def jobset(name: str, workers: int) -> dict[str, Any]:
    """A driver Job and `workers` worker Jobs of 2 pods, one whole node per pod."""

    def replicated(job: str, replicas: int, pods: int) -> dict[str, Any]:
        spec = {"parallelism": pods, "completions": pods, "backoffLimit": 0,
                "template": gpu_template()}
        return {"name": job, "replicas": replicas, "template": {"spec": spec}}

    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "labels": QUEUE, "annotations": RACK},
        "spec": {"replicatedJobs": [replicated("driver", 1, 1),
                                    replicated("workers", workers, 2)]},
    }  # fmt: skip


def leaderworkerset(name: str, replicas: int, size: int) -> dict[str, Any]:
    template = gpu_template()
    template["spec"].pop("restartPolicy")  # a StatefulSet's pods restart Always
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "labels": QUEUE, "annotations": RACK},
        "spec": {"replicas": replicas,
                 "leaderWorkerTemplate": {"size": size, "workerTemplate": template}},
    }  # fmt: skip


def test_a_jobset_is_one_gang_of_all_its_jobs(
    cluster: LocalCluster, namespace: str, jobset_controller: Running, phalanx: Operator
) -> None:
    apply_example(cluster, namespace, "jobset.yaml")  # 5 pods x 4 GPUs: fits a rack
    cluster.apply([jobset("wide", workers=2)], namespace=namespace)  # 5 x 8: does not
    fits, wide = "jobset.sigs.k8s.io/jobset-name=train", "jobset.sigs.k8s.io/jobset-name=wide"
    starts_whole_in_one_rack(cluster, namespace, "jobset-train", fits, 5)
    owned_by_workload(cluster, namespace, "jobset-train", "jobset", "train")
    starts_no_pod(cluster, namespace, "jobset-wide", wide, 5)  # a rack holds 4
    goes_with_its_workload(cluster, namespace, "jobset", "train", ["jobset-train"], fits)
    goes_with_its_workload(cluster, namespace, "jobset", "wide", ["jobset-wide"], wide)


def test_a_jobset_annotated_per_replicated_job_is_one_gang_per_replicated_job(
    cluster: LocalCluster, namespace: str, jobset_controller: Running, phalanx: Operator
) -> None:
    per_job = {**RACK, "scheduling.phalanx.io/gang-scope": "replicated-job"}
    split, wide = jobset("split", workers=2), jobset("wide", workers=3)  # 4 and 6 workers
    for workload in (split, wide):
        workload["metadata"]["annotations"] = per_job
    cluster.apply([split, wide], namespace=namespace)

    def of(name: str, job: str) -> str:
        return f"jobset.sigs.k8s.io/jobset-name={name},jobset.sigs.k8s.io/replicatedjob-name={job}"

    driver = starts_whole_in_one_rack(
        cluster, namespace, "jobset-split-driver", of("split", "driver"), 1)
    workers = starts_whole_in_one_rack(
        cluster, namespace, "jobset-split-workers", of("split", "workers"), 4)
    assert not set(driver) & set(workers)
    for group in ("jobset-split-driver", "jobset-split-workers"):
        owned_by_workload(cluster, namespace, group, "jobset", "split")
    assert gone(cluster, "pg", "jobset-split", "-n", namespace)  # no gang of the whole set
    # 6 workers do not fit a rack: their gang waits, and the driver's starts without them.
    starts_no_pod(cluster, namespace, "jobset-wide-workers", of("wide", "workers"), 6)
    starts_whole_in_one_rack(cluster, namespace, "jobset-wide-driver", of("wide", "driver"), 1)
    goes_with_its_workload(cluster, namespace, "jobset", "split",
                           ["jobset-split-driver", "jobset-split-workers"],
                           "jobset.sigs.k8s.io/jobset-name=split")


def test_each_group_of_a_leaderworkerset_is_a_gang(
    cluster: LocalCluster, namespace: str, lws_controller: Running, phalanx: Operator
) -> None:
    apply_example(cluster, namespace, "leaderworkerset.yaml")  # serve: 2 groups of 4
    cluster.apply([leaderworkerset("wide", 1, size=5)], namespace=namespace)
    name = "leaderworkerset.sigs.k8s.io/name"
    racks = set()
    for index in (0, 1):
        selector = f"{name}=serve,leaderworkerset.sigs.k8s.io/group-index={index}"
        nodes = starts_whole_in_one_rack(cluster, namespace, f"lws-serve-{index}", selector, 4)
        racks.add(frozenset(nodes))
    assert len(racks) == 2
    owned_by_workload(cluster, namespace, "lws-serve-0", "leaderworkerset", "serve")
    starts_no_pod(cluster, namespace, "lws-wide-0", f"{name}=wide", 5)
    goes_with_its_workload(cluster, namespace, "leaderworkerset", "serve",
                           ["lws-serve-0", "lws-serve-1"], f"{name}=serve")
