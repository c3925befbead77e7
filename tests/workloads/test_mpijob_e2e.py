"""Queue-labelled Kubeflow MPIJobs (v2beta1) run by the real mpi-operator (v0.8.0): the
launcher and the workers are one gang, started whole inside the required rack or not at
all; with launcherCreationPolicy WaitForWorkersReady the workers alone are the gang and the
launcher mpi-operator creates once they run joins them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from gang_checks import (
    EXAMPLES,
    apply_example,
    bound,
    goes_with_its_workload,
    owned_by_workload,
    phalanx_group,
    pods,
    racks,
    starts_no_pod,
    starts_whole_in_one_rack,
)

from phalanx.cluster import LocalCluster
from phalanx.cluster.workload_controllers import Running
from phalanx.operator.main import Operator
from polling import eventually

pytestmark = pytest.mark.e2e

JOB = "training.kubeflow.org/job-name"
ROLE = "training.kubeflow.org/job-role"


def example(name: str, workers: int, **changes: Any) -> dict[str, Any]:
    """examples/workloads/mpijob.yaml (a launcher, GPU workers), renamed and resized."""
    obj = yaml.safe_load(Path(EXAMPLES / "workloads" / "mpijob.yaml").read_text())
    obj["metadata"]["name"] = name
    obj["metadata"]["labels"]["scheduling.phalanx.io/queue"] = "default"
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = workers
    obj["spec"].update(changes)
    return dict(obj)


def test_an_mpijobs_launcher_and_workers_are_one_gang_in_one_rack_or_wait_whole(
    cluster: LocalCluster, namespace: str, mpi_operator: Running, phalanx: Operator
) -> None:
    apply_example(cluster, namespace, "mpijob.yaml")  # a launcher and 4 workers x 8 GPUs
    cluster.apply([example("wide", workers=5)], namespace=namespace)  # 40 GPUs: no rack
    fits, wide = f"{JOB}=allreduce", f"{JOB}=wide"
    starts_whole_in_one_rack(cluster, namespace, "mpijob-allreduce", fits, 5)
    owned_by_workload(cluster, namespace, "mpijob-allreduce", "mpijob", "allreduce")
    group = phalanx_group(cluster, namespace, "mpijob-allreduce")["spec"]
    assert (group["minMember"], group["queue"]) == (5, "team-a")
    assert {r["name"]: r["minMember"] for r in group["roles"]} == {"launcher": 1, "worker": 4}
    assert len(pods(cluster, namespace, f"{fits},{ROLE}=launcher")) == 1
    starts_no_pod(cluster, namespace, "mpijob-wide", wide, 6)
    goes_with_its_workload(cluster, namespace, "mpijob", "allreduce", ["mpijob-allreduce"],
                           fits)


def test_a_launcher_that_waits_for_ready_workers_joins_them_after_their_start(
    cluster: LocalCluster, namespace: str, mpi_operator: Running, phalanx: Operator
) -> None:
    """mpi-operator creates the launcher only once every worker is ready: a gang counting it
    would never start (mpi-operator issue #608); here the workers start, then it does."""
    cluster.apply([example("staged", workers=2, launcherCreationPolicy="WaitForWorkersReady")],
                  namespace=namespace)
    job = f"{JOB}=staged"
    workers = starts_whole_in_one_rack(cluster, namespace, "mpijob-staged",
                                       f"{job},{ROLE}=worker", 2)
    assert phalanx_group(cluster, namespace, "mpijob-staged")["spec"]["minMember"] == 2
    launcher = f"{job},{ROLE}=launcher"
    assert eventually(lambda: len(bound(pods(cluster, namespace, launcher))) == 1, 120), (
        pods(cluster, namespace, job))
    assert racks(cluster, bound(pods(cluster, namespace, launcher))) == racks(cluster, workers)
