"""KubeRay RayClusters and Kubeflow MPIJobs (v2) become one gang each, sized as their own
gang integrations size it, and the pods their controllers create (labelled as ray-operator
v1.5 and mpi-operator v0.8 label them) join it in their roles; the pods above the gang
(Ray's autoscaled workers, an MPIJob launcher created after its workers) are elastic."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from crd_schema import validate
from deploy.objects import node, pod
from phalanx.core import InvalidObject, run_cycle, snapshot_from_objects
from phalanx.workloads import pod_groups_for
from phalanx.workloads.gangs import MAX_ROLE_NAME, MAX_ROLES, ROLE_NAME

REPO = Path(__file__).resolve().parents[2]
QUEUE = {"scheduling.phalanx.io/queue": "default"}
GPUS = {"limits": {"nvidia.com/gpu": "8"}}


def template(resources: dict[str, Any] | None = None) -> dict[str, Any]:
    container = {"name": "ray", "image": "x", "resources": resources or {}}
    return {"spec": {"schedulerName": "phalanx", "containers": [container]}}


def worker_group(name: str, **counts: Any) -> dict[str, Any]:
    return {"groupName": name, "template": template(GPUS), **counts}


def raycluster(*groups: dict[str, Any], autoscaling: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "train", "namespace": "ml", "uid": "uid-1", "labels": dict(QUEUE)},
        "spec": {"enableInTreeAutoscaling": autoscaling,
                 "headGroupSpec": {"template": template()},
                 "workerGroupSpecs": list(groups)},
    }  # fmt: skip


def mpijob(workers: int | None = 4, **spec: Any) -> dict[str, Any]:
    replicas: dict[str, Any] = {"Launcher": {"replicas": 1, "template": template()}}
    if workers is not None:
        replicas["Worker"] = {"replicas": workers, "template": template(GPUS)}
    return {
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
        "metadata": {"name": "allreduce", "namespace": "ml", "uid": "uid-2",
                     "labels": dict(QUEUE)},
        "spec": {"mpiReplicaSpecs": replicas, **spec},
    }  # fmt: skip


def the_group(obj: dict[str, Any]) -> dict[str, Any]:
    [group] = pod_groups_for(obj)
    validate(group)  # what the API server accepts
    return group


def spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    spec = dict(the_group(obj)["spec"])
    spec.pop("queue")
    return spec


def roles(**minimum: int) -> list[dict[str, Any]]:
    return [{"name": name, "minMember": count} for name, count in minimum.items()]


def test_an_autoscaled_rayclusters_gang_is_its_head_and_each_groups_minimum() -> None:
    """As KubeRay's Volcano PodGroup: 1 + sum(minReplicas x numOfHosts)."""
    obj = raycluster(worker_group("gpu", replicas=6, minReplicas=4, maxReplicas=8),
                     worker_group("tpu", replicas=1, minReplicas=1, numOfHosts=2),
                     worker_group("spare", replicas=3, minReplicas=0), autoscaling=True)
    assert spec_of(obj) == {"minMember": 7, "roles": roles(headgroup=1, gpu=4, tpu=2)}


def test_without_the_autoscaler_every_worker_kuberay_creates_is_in_the_gang() -> None:
    """Nothing scales the groups: replicas, kept within min..max as KubeRay keeps them."""
    obj = raycluster(worker_group("gpu", replicas=4),  # minReplicas defaults to 0
                     worker_group("capped", replicas=9, minReplicas=1, maxReplicas=2),
                     worker_group("raised", replicas=0, minReplicas=3),
                     worker_group("off", replicas=5, suspend=True))
    assert spec_of(obj) == {"minMember": 10, "roles": roles(headgroup=1, gpu=4, capped=2,
                                                             raised=3)}


def test_a_raycluster_is_owned_by_its_podgroup_named_after_it() -> None:
    group = the_group(raycluster(worker_group("gpu", replicas=4)))
    assert group["metadata"]["name"] == "raycluster-train"
    [owner] = group["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("RayCluster", "uid-1", True)


def test_a_rayjobs_cluster_gets_its_gang_but_not_the_rayjob_itself() -> None:
    """KubeRay copies the RayJob's labels onto the RayCluster it creates and owns."""
    obj = raycluster(worker_group("gpu", replicas=4))
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "ray.io/v1", "kind": "RayJob",
                                           "name": "job", "uid": "uid-0", "controller": True}]
    assert the_group(obj)["spec"]["minMember"] == 5
    rayjob = {**obj, "kind": "RayJob", "spec": {"rayClusterSpec": obj["spec"]}}
    assert pod_groups_for(rayjob) == []


def test_more_roles_than_a_podgroup_holds_keep_the_head_only() -> None:
    groups = [worker_group(f"g{i}", replicas=1, minReplicas=1) for i in range(MAX_ROLES)]
    assert spec_of(raycluster(*groups)) == {"minMember": 17, "roles": roles(headgroup=1)}


@pytest.mark.parametrize("name", ["", "-gpu", "a b", "x" * 64, 7, None])
def test_a_worker_group_name_that_is_no_label_value_is_refused_by_field(name: Any) -> None:
    obj = raycluster(worker_group("gpu", replicas=1), worker_group("x", replicas=1))
    obj["spec"]["workerGroupSpecs"][1]["groupName"] = name
    with pytest.raises(InvalidObject) as caught:
        pod_groups_for(obj)
    assert caught.value.field == "spec.workerGroupSpecs[1].groupName"


def test_the_role_name_rules_are_the_podgroup_crds() -> None:
    crd = yaml.safe_load((REPO / "crds" / "scheduling.phalanx.io_podgroups.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    field = schema["properties"]["roles"]
    name = field["items"]["properties"]["name"]
    assert (field["maxItems"], name["pattern"], name["maxLength"]) == (
        MAX_ROLES, ROLE_NAME.pattern, MAX_ROLE_NAME)
    assert re.fullmatch(ROLE_NAME, "headgroup")


def test_an_mpijob_is_its_launcher_and_workers_as_mpi_operator_counts_them() -> None:
    assert spec_of(mpijob(4)) == {"minMember": 5, "roles": roles(launcher=1, worker=4)}
    assert spec_of(mpijob(None)) == {"minMember": 1, "roles": roles(launcher=1)}


def test_a_launcher_created_once_the_workers_are_ready_is_no_part_of_the_gang() -> None:
    """It could never join a gang its workers wait for (mpi-operator issue #608)."""
    obj = mpijob(4, launcherCreationPolicy="WaitForWorkersReady")
    assert spec_of(obj) == {"minMember": 4, "roles": roles(worker=4)}


def test_min_available_is_the_gang_and_drops_roles_it_cannot_hold() -> None:
    obj = mpijob(4, runPolicy={"schedulingPolicy": {"minAvailable": 3}})
    assert spec_of(obj) == {"minMember": 3}


def test_an_mpijobs_priority_class_is_mpi_operators_choice() -> None:
    """runPolicy.schedulingPolicy.priorityClass, else the launcher's, else the workers'."""
    obj = mpijob(2)
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = "low"
    assert the_group(obj)["spec"]["priorityClassName"] == "low"
    obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["priorityClassName"] = "mid"
    assert the_group(obj)["spec"]["priorityClassName"] == "mid"
    obj["spec"]["runPolicy"] = {"schedulingPolicy": {"priorityClass": "high"}}
    assert the_group(obj)["spec"]["priorityClassName"] == "high"


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda o: o["spec"]["mpiReplicaSpecs"].pop("Launcher"), "spec.mpiReplicaSpecs.Launcher"),
        (lambda o: o["spec"].update(launcherCreationPolicy="Later"),
         "spec.launcherCreationPolicy"),
        (lambda o: o["spec"]["mpiReplicaSpecs"]["Worker"].update(replicas=-1),
         "spec.mpiReplicaSpecs.Worker.replicas"),
    ],
)
def test_a_bad_mpijob_is_refused_by_field(edit: Any, field: str) -> None:
    obj = mpijob(4)
    edit(obj)
    with pytest.raises(InvalidObject) as caught:
        pod_groups_for(obj)
    assert caught.value.field == field


def kuberay_pod(name: str, kind: str, group: str, gpus: int) -> dict[str, Any]:
    """Labels as ray-operator v1.5 puts them (common/pod.go labelPod)."""
    made = pod(name, gpus)
    made["metadata"]["labels"] = {"ray.io/cluster": "train", "ray.io/node-type": kind,
                                  "ray.io/group": group, "ray.io/is-ray-node": "yes",
                                  "app.kubernetes.io/created-by": "kuberay-operator"}
    return made


def test_the_head_starts_with_the_gang_though_autoscaled_workers_sort_before_it() -> None:
    """1 head and 6 workers (the autoscaler asked for 6, minReplicas 4) on 4 GPU nodes:
    the head and 4 workers start, 2 workers wait. The workers' names sort first, so a gang
    taken in name order (no roles) would be 5 workers, which never fit."""
    obj = raycluster(worker_group("gpu", replicas=6, minReplicas=4), autoscaling=True)
    workers = [kuberay_pod(f"train-gpu-worker-{i}", "worker", "gpu", 8) for i in range(6)]
    head = kuberay_pod("train-head-abcde", "head", "headgroup", 0)
    nodes = [node(f"n{i}", "r0") for i in range(4)]
    snapshot = snapshot_from_objects([*nodes, the_group(obj), head, *workers], strict=True)
    assert {p.name: (p.group, p.role) for p in snapshot.pods}[head["metadata"]["name"]] == (
        "raycluster-train", "headgroup")
    bound = {binding.pod for binding in run_cycle(snapshot).bindings}
    assert len(bound) == 5 and head["metadata"]["name"] in {key.split("/")[-1] for key in bound}


def test_mpi_operators_pods_join_the_mpijobs_gang_launcher_before_its_job() -> None:
    """Labels as mpi-operator v0.8 puts them; the launcher is a Job's pod too."""
    labels = {"training.kubeflow.org/job-name": "allreduce",
              "training.kubeflow.org/operator-name": "mpi-operator",
              "training.kubeflow.org/job-role": "launcher",
              "batch.kubernetes.io/job-name": "allreduce-launcher",
              "job-name": "allreduce-launcher"}
    launcher = pod("allreduce-launcher-xyz12", 0)
    launcher["metadata"]["labels"] = labels
    worker = pod("allreduce-worker-0", 8)
    worker["metadata"]["labels"] = {**labels, "training.kubeflow.org/job-role": "worker"}
    for name in ("batch.kubernetes.io/job-name", "job-name"):
        del worker["metadata"]["labels"][name]
    snapshot = snapshot_from_objects([the_group(mpijob(1)), launcher, worker], strict=True)
    assert sorted((p.group, p.role) for p in snapshot.pods) == [
        ("mpijob-allreduce", "launcher"), ("mpijob-allreduce", "worker")]


def test_a_pytorchjobs_pods_take_no_role_from_kubeflow_labels() -> None:
    """Only mpi-operator's job-role names a role of its gang."""
    made = pod("ddp-master-0", 8)
    made["metadata"]["labels"] = {"training.kubeflow.org/job-name": "ddp",
                                  "training.kubeflow.org/job-role": "master"}
    [parsed] = snapshot_from_objects([made], strict=True).pods
    assert parsed.role is None


@pytest.mark.parametrize(("example", "expected"),
                         [("raycluster.yaml", {"raycluster-ray": 5}),
                          ("mpijob.yaml", {"mpijob-allreduce": 5})])
def test_the_examples_make_the_gangs_their_comments_promise(
    example: str, expected: dict[str, int]
) -> None:
    [obj] = yaml.safe_load_all((REPO / "examples" / "workloads" / example).read_text())
    obj = copy.deepcopy(obj)
    obj["metadata"].update(namespace="demo", uid="uid-1")
    assert {g["metadata"]["name"]: g["spec"]["minMember"] for g in pod_groups_for(obj)} == (
        expected)
