"""Which pods the mutating webhook sends to Phalanx, and how (webhooks/pods.py, owners.py)."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.config.settings import Mode
from phalanx.webhooks.owners import MAX_HOPS, controller_of, first_owner
from phalanx.webhooks.pods import decide_pod

QUEUE = "scheduling.phalanx.io/queue"
GATE = {"name": "scheduling.phalanx.io/gang"}
DEFAULT_QUEUE_NS = {"scheduling.phalanx.io/default-queue": "team-a"}


def pod(labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "train-", "namespace": "ml", "labels": labels or {}},
            "spec": {"schedulerName": "default-scheduler", "containers": [{"name": "main"}],
                     **spec}}


def workload(kind: str, name: str, labels: dict[str, str] | None = None,
             owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml", "uid": f"uid-{name}",
                            "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [owner]
    return {"kind": kind, "metadata": meta}


def ref(api_version: str, kind: str, name: str, controller: bool = True) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": f"uid-{name}",
            "controller": controller}


JOB = workload("Job", "train", {QUEUE: "team-a"})


@pytest.mark.parametrize(("mode", "expected"), [
    (Mode.BINDER, {"schedulerName": "phalanx"}),
    (Mode.BOTH, {"schedulerName": "phalanx"}),
    (Mode.GATE, {"schedulingGates": [GATE]}),
])
def test_a_pod_of_a_queue_labelled_workload_is_sent_as_the_mode_says(
    mode: Mode, expected: dict[str, Any]
) -> None:
    decision = decide_pod(pod(), [JOB], {}, mode)
    assert decision.spec == expected
    assert decision.reason == "its workload Job train has queue team-a"


def test_gate_mode_keeps_the_pod_s_other_gates() -> None:
    other = {"name": "example.com/quota"}
    decision = decide_pod(pod(schedulingGates=[other]), [JOB], {}, Mode.GATE)
    assert decision.spec == {"schedulingGates": [other, GATE]}


def test_the_top_workload_of_the_chain_decides() -> None:
    # A JobSet's Job copies no queue label; the JobSet carries it: the pod is the JobSet's.
    jobset = workload("JobSet", "js", {QUEUE: "team-a"})
    child = workload("Job", "js-workers-0", owner=ref("jobset.x-k8s.io/v1alpha2", "JobSet", "js"))
    assert decide_pod(pod(), [child, jobset], {}, Mode.BINDER).changes
    # A labelled Job inside an unlabelled JobSet makes no gang of its own (the operator
    # gives it none either).
    unlabelled = workload("JobSet", "js")
    labelled_child = workload("Job", "js-workers-0", {QUEUE: "team-a"})
    assert not decide_pod(pod(), [labelled_child, unlabelled], {}, Mode.BINDER).changes


@pytest.mark.parametrize(("labels", "why"), [
    ({"scheduling.phalanx.io/pod-group": "g"}, "names PodGroup g"),
    ({QUEUE: "team-b"}, "carries queue label team-b"),
])
def test_a_pod_s_own_group_or_queue_label_is_enough(labels: dict[str, str], why: str) -> None:
    decision = decide_pod(pod(labels), [], {}, Mode.BINDER)
    assert decision.spec == {"schedulerName": "phalanx"} and decision.reason == why


def test_a_namespace_default_queue_covers_its_workloads_not_its_bare_pods() -> None:
    unlabelled = workload("Job", "train")
    decision = decide_pod(pod(), [unlabelled], DEFAULT_QUEUE_NS, Mode.BINDER)
    assert decision.changes
    assert decision.reason == "its workload Job train is in a namespace with default queue team-a"
    assert not decide_pod(pod(), [], DEFAULT_QUEUE_NS, Mode.BINDER).changes


@pytest.mark.parametrize(("spec", "labels", "owners", "reason"), [
    ({"schedulerName": "volcano"}, {QUEUE: "a"}, [JOB], "names another scheduler (volcano)"),
    ({"schedulerName": "phalanx"}, {}, [JOB], "already names scheduler phalanx"),
    ({"schedulingGates": [GATE]}, {}, [JOB], "already carries the gate"),
    ({"nodeName": "n1"}, {}, [JOB], "created on a node"),
    ({}, {}, [], "belongs to no gang Phalanx manages"),
    ({}, {}, [workload("Job", "plain")], "belongs to no gang Phalanx manages"),
    ({}, {}, [workload("ReplicaSet", "rs", {QUEUE: "a"})], "belongs to no gang Phalanx manages"),
])
def test_other_pods_are_left_as_they_are(
    spec: dict[str, Any], labels: dict[str, str], owners: list[dict[str, Any]], reason: str
) -> None:
    decision = decide_pod(pod(labels, **spec), owners, {}, Mode.BINDER)
    assert decision.spec == {} and decision.reason == reason


def test_the_owner_chain_follows_controllers_of_gang_kinds_only() -> None:
    owned = pod()
    owned["metadata"]["ownerReferences"] = [ref("batch/v1", "Job", "train")]
    found = first_owner(owned, "ml")
    assert found is not None
    assert found.path == "/apis/batch/v1/namespaces/ml/jobs/train"
    assert found.uid == "uid-train"
    child = workload("Job", "js-a", owner=ref("jobset.x-k8s.io/v1alpha2", "JobSet", "js"))
    up = controller_of(child, "ml")
    assert up is not None and up.path == "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ml/jobsets/js"
    replica_set = pod()
    replica_set["metadata"]["ownerReferences"] = [ref("apps/v1", "ReplicaSet", "rs")]
    assert first_owner(replica_set, "ml") is None
    not_controller = pod()
    not_controller["metadata"]["ownerReferences"] = [ref("batch/v1", "Job", "j", False)]
    assert first_owner(not_controller, "ml") is None
    assert MAX_HOPS == 3


def test_a_leaderworkerset_pod_reads_its_leaderworkerset_by_label() -> None:
    # Its controller is a StatefulSet; its label names the LeaderWorkerSet.
    member = pod({"leaderworkerset.sigs.k8s.io/name": "serve"})
    member["metadata"]["ownerReferences"] = [ref("apps/v1", "StatefulSet", "serve-0")]
    found = first_owner(member, "ml")
    assert found is not None and found.uid is None
    assert found.path == "/apis/leaderworkerset.x-k8s.io/v1/namespaces/ml/leaderworkersets/serve"


def test_a_rayclusters_pods_and_an_mpijobs_launcher_and_workers_are_followed() -> None:
    """KubeRay's pods are controlled by their RayCluster (a RayJob's cluster carries the
    RayJob's labels); mpi-operator's workers by the MPIJob, its launcher by a Job the
    MPIJob controls: each chain ends at a workload kind that makes gangs."""
    ray_pod = pod()
    ray_pod["metadata"]["ownerReferences"] = [ref("ray.io/v1", "RayCluster", "rc")]
    found = first_owner(ray_pod, "ml")
    assert found is not None and found.path == "/apis/ray.io/v1/namespaces/ml/rayclusters/rc"
    raycluster = workload("RayCluster", "rc", {QUEUE: "team-a"})
    assert decide_pod(ray_pod, [raycluster], {}, Mode.BINDER).changes

    worker = pod()
    worker["metadata"]["ownerReferences"] = [ref("kubeflow.org/v2beta1", "MPIJob", "pi")]
    found = first_owner(worker, "ml")
    assert found is not None and found.path.endswith("/namespaces/ml/mpijobs/pi")
    mpijob = workload("MPIJob", "pi", {QUEUE: "team-a"})
    launcher_job = workload("Job", "pi-launcher", owner=ref("kubeflow.org/v2beta1", "MPIJob", "pi"))
    next_hop = controller_of(launcher_job, "ml")
    assert next_hop is not None and next_hop.path.endswith("/mpijobs/pi")
    assert decide_pod(worker, [mpijob], {}, Mode.BINDER).changes
    assert decide_pod(pod(), [launcher_job, mpijob], {}, Mode.GATE).spec == {
        "schedulingGates": [GATE]
    }
