"""A queue-labelled Kubeflow TrainJob (Trainer v2; it runs as a JobSet) run by the real
controllers: its trainer nodes are one gang, started whole inside the required rack or
not at all, reported on its PodGroup, and gone with the TrainJob."""

from __future__ import annotations

from typing import Any

import pytest
from gang_checks import (
    apply_example,
    goes_with_its_workload,
    owned_by_workload,
    starts_no_pod,
    starts_whole_in_one_rack,
)

from phalanx.cluster import LocalCluster
from phalanx.cluster.workload_controllers import Running
from phalanx.operator.main import Operator

pytestmark = pytest.mark.e2e

RUNTIME = "phalanx-torch"  # the TrainingRuntime of examples/workloads/trainjob.yaml


def trainjob(name: str, nodes: int) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": name, "labels": {"scheduling.phalanx.io/queue": "default"},
                     "annotations": {"scheduling.phalanx.io/topology-required": "rack"}},
        "spec": {"runtimeRef": {"name": RUNTIME, "kind": "TrainingRuntime"},
                 "trainer": {"numNodes": nodes,
                             "resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}}}},
    }  # fmt: skip


def test_a_trainjobs_trainer_nodes_are_one_gang(
    cluster: LocalCluster, namespace: str, kubeflow_controller: Running, phalanx: Operator
) -> None:
    apply_example(cluster, namespace, "trainjob.yaml")  # its runtime and a TrainJob of 4
    cluster.apply([trainjob("wide", 5)], namespace=namespace)
    fits, wide = "jobset.sigs.k8s.io/jobset-name=llm", "jobset.sigs.k8s.io/jobset-name=wide"
    starts_whole_in_one_rack(cluster, namespace, "trainjob-llm", fits, 4)
    owned_by_workload(cluster, namespace, "trainjob-llm", "trainjob", "llm")
    starts_no_pod(cluster, namespace, "trainjob-wide", wide, 5)  # a rack holds 4
    goes_with_its_workload(cluster, namespace, "trainjob", "llm", ["trainjob-llm"], fits)
