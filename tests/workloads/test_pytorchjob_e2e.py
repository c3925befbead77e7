"""A queue-labelled Kubeflow PyTorchJob run by the real training-operator (v1): its master
and workers are one gang, started whole inside the required rack or not at all, reported
on its PodGroup, and gone with the PyTorchJob."""

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

pytestmark = pytest.mark.e2e

JOB = "training.kubeflow.org/job-name"


def pytorchjob(name: str, workers: int) -> dict[str, Any]:
    def replica(count: int) -> dict[str, Any]:
        template = gpu_template()
        template["spec"]["containers"][0]["name"] = "pytorch"  # the container it configures
        template["spec"].pop("restartPolicy")
        return {"replicas": count, "restartPolicy": "Never", "template": template}

    return {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": name, "labels": {"scheduling.phalanx.io/queue": "default"},
                     "annotations": {"scheduling.phalanx.io/topology-required": "rack"}},
        "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(workers)}},
    }  # fmt: skip


def test_a_pytorchjobs_master_and_workers_are_one_gang(
    cluster: LocalCluster, namespace: str, training_operator: Running, phalanx: Operator
) -> None:
    apply_example(cluster, namespace, "pytorchjob.yaml")  # a master and 3 workers
    cluster.apply([pytorchjob("wide", workers=4)], namespace=namespace)
    fits, wide = f"{JOB}=ddp", f"{JOB}=wide"
    starts_whole_in_one_rack(cluster, namespace, "pytorchjob-ddp", fits, 4)
    owned_by_workload(cluster, namespace, "pytorchjob-ddp", "pytorchjob", "ddp")
    starts_no_pod(cluster, namespace, "pytorchjob-wide", wide, 5)  # a rack holds 4
    goes_with_its_workload(cluster, namespace, "pytorchjob", "ddp", ["pytorchjob-ddp"], fits)
