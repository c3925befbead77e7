"""Queue-labelled KubeRay RayClusters and RayJobs run by the real ray-operator (v1.5.0): the
head and the GPU workers are one gang, started whole inside the required rack or not at
all, on one PodGroup per RayCluster; workers Ray's autoscaler adds are elastic members."""

from __future__ import annotations

import copy
import json
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
from polling import eventually, get_json

pytestmark = pytest.mark.e2e

CLUSTER = "ray.io/cluster"


def example(name: str, workers: int, **changes: Any) -> dict[str, Any]:
    """examples/workloads/raycluster.yaml (head + GPU workers), renamed and resized."""
    obj = yaml.safe_load(Path(EXAMPLES / "workloads" / "raycluster.yaml").read_text())
    obj["metadata"]["name"] = name
    obj["metadata"]["labels"]["scheduling.phalanx.io/queue"] = "default"
    group = obj["spec"]["workerGroupSpecs"][0]
    group.update(replicas=workers, minReplicas=workers, maxReplicas=workers + 4)
    obj["spec"].update(changes)
    return dict(obj)


def test_a_rayclusters_head_and_gpu_workers_are_one_gang_in_one_rack_or_wait_whole(
    cluster: LocalCluster, namespace: str, kuberay_controller: Running, phalanx: Operator
) -> None:
    apply_example(cluster, namespace, "raycluster.yaml")  # a head and 4 workers x 8 GPUs
    cluster.apply([example("wide", workers=5)], namespace=namespace)  # 48 GPUs: no rack
    fits, wide = f"{CLUSTER}=ray", f"{CLUSTER}=wide"
    starts_whole_in_one_rack(cluster, namespace, "raycluster-ray", fits, 5)
    owned_by_workload(cluster, namespace, "raycluster-ray", "raycluster", "ray")
    group = phalanx_group(cluster, namespace, "raycluster-ray")["spec"]
    assert (group["minMember"], group["queue"]) == (5, "team-a")
    assert {r["name"]: r["minMember"] for r in group["roles"]} == {"headgroup": 1, "gpu": 4}
    starts_no_pod(cluster, namespace, "raycluster-wide", wide, 6)
    goes_with_its_workload(cluster, namespace, "raycluster", "ray", ["raycluster-ray"], fits)


def test_workers_rays_autoscaler_adds_join_the_running_gang_one_by_one(
    cluster: LocalCluster, namespace: str, kuberay_controller: Running, phalanx: Operator
) -> None:
    """The autoscaler raises a group's replicas; KubeRay creates the workers; they start
    next to the gang without it waiting for them, and its minMember stays."""
    obj = example("elastic", workers=2)
    del obj["metadata"]["annotations"]  # no rack required: the gang's nodes first
    cluster.apply([obj], namespace=namespace)
    selector = f"{CLUSTER}=elastic"
    assert eventually(lambda: len(bound(pods(cluster, namespace, selector))) == 3, 120)
    patch = [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 4}]
    cluster.kubectl("patch", "raycluster", "elastic", "-n", namespace, "--type=json",
                    "-p", json.dumps(patch))
    assert eventually(lambda: len(bound(pods(cluster, namespace, selector))) == 5, 120), (
        pods(cluster, namespace, selector))
    group = phalanx_group(cluster, namespace, "raycluster-elastic")
    assert group["spec"]["minMember"] == 3
    assert group["status"]["phase"] == "Running"


def test_a_rayjobs_cluster_is_the_gang_with_the_rayjobs_queue_and_topology(
    cluster: LocalCluster, namespace: str, kuberay_controller: Running, phalanx: Operator
) -> None:
    """KubeRay creates the RayCluster (named after the RayJob, owned by it) with the RayJob's
    labels and annotations: its PodGroup takes the queue and the required rack."""
    ray = example("unused", workers=3)
    spec = copy.deepcopy(ray["spec"])
    rayjob = {
        "apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": "tune", "labels": ray["metadata"]["labels"],
                     "annotations": ray["metadata"]["annotations"]},
        "spec": {"entrypoint": "python tune.py", "rayClusterSpec": spec},
    }  # fmt: skip
    cluster.apply([rayjob], namespace=namespace)

    def made() -> list[dict[str, Any]]:
        return list(get_json(cluster, "raycluster", "-n", namespace)["items"])

    assert eventually(lambda: len(made()) == 1, 60)
    name = made()[0]["metadata"]["name"]
    assert name.startswith("tune-")
    group = f"raycluster-{name}"
    nodes = starts_whole_in_one_rack(cluster, namespace, group, f"{CLUSTER}={name}", 4)
    assert len(racks(cluster, nodes)) == 1
    assert phalanx_group(cluster, namespace, group)["spec"]["minMember"] == 4
    groups = get_json(cluster, "pg", "-n", namespace)["items"]
    assert [g["metadata"]["name"] for g in groups] == [group]  # none for the RayJob itself
