"""A gang stopped at its runtime limit stops its workload (#31): which workload (the top of
its pods' controller chain), and how each kind stops (a Job fails at its deadline, a
JobSet is suspended, other kinds are named as able to recreate the pods)."""

from __future__ import annotations

from typing import Any

from phalanx.operator.kube.client import Reply
from phalanx.operator.workload_stop import (
    NOT_STOPPED,
    STOPPED,
    WorkloadStop,
    stop_for,
    stopped_event,
    top_workload,
    workload_path,
)


def obj(api_version: str, kind: str, name: str, owner: dict[str, Any] | None = None,
        **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml", "uid": f"uid-{name}"}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                    "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"], "controller": True}]
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec}


def by_uid(*bodies: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["metadata"]["uid"]: b for b in bodies}


JOBSET = obj("jobset.x-k8s.io/v1alpha2", "JobSet", "train")
CHILD = obj("batch/v1", "Job", "train-workers-0", JOBSET)
JOB = obj("batch/v1", "Job", "solo", parallelism=2)


def test_the_workload_is_the_top_of_the_pods_controller_chain() -> None:
    pod = obj("v1", "Pod", "train-workers-0-0", CHILD)
    assert top_workload([pod], by_uid(JOBSET, CHILD)) is JOBSET
    assert top_workload([obj("v1", "Pod", "solo-x", JOB)], by_uid(JOB)) is JOB


def test_an_owner_phalanx_does_not_watch_ends_the_chain_named_by_its_reference() -> None:
    cron = obj("batch/v1", "CronJob", "nightly")
    job = obj("batch/v1", "Job", "nightly-1", cron)
    assert top_workload([obj("v1", "Pod", "p", job)], by_uid(job)) is job  # the Job, not above
    replicas = obj("apps/v1", "ReplicaSet", "web")
    found = top_workload([obj("v1", "Pod", "w", replicas)], by_uid(JOB))
    assert found is not None and (found["kind"], found["metadata"]["name"]) == (
        "ReplicaSet", "web")


def test_pods_no_controller_made_have_no_workload() -> None:
    assert top_workload([obj("v1", "Pod", "bare")], by_uid(JOB)) is None


def test_a_job_gets_the_limit_as_its_deadline_so_its_controller_fails_it() -> None:
    stop = stop_for(JOB, 3600)
    assert stop is not None and stop.stoppable
    assert stop.patch == {"spec": {"activeDeadlineSeconds": 3600}}
    assert "DeadlineExceeded" in stop.message
    assert workload_path(JOB) == "/apis/batch/v1/namespaces/ml/jobs/solo"
    torch = stop_for(obj("kubeflow.org/v1", "PyTorchJob", "t", runPolicy={"suspend": False}),
                     600)
    assert torch is not None and torch.patch == {
        "spec": {"runPolicy": {"activeDeadlineSeconds": 600}}}
    assert stop_for(obj("kubeflow.org/v1", "PyTorchJob", "t",
                        runPolicy={"activeDeadlineSeconds": 60}), 600) is None


def test_a_job_that_stops_by_itself_or_is_over_is_left_alone() -> None:
    assert stop_for(obj("batch/v1", "Job", "own", activeDeadlineSeconds=600), 3600) is None
    longer = stop_for(obj("batch/v1", "Job", "own", activeDeadlineSeconds=7200), 3600)
    assert longer is not None and longer.patch == {"spec": {"activeDeadlineSeconds": 3600}}
    done = {**JOB, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    assert stop_for(done, 3600) is None


def test_a_jobset_is_suspended_and_a_suspended_one_left_alone() -> None:
    stop = stop_for(JOBSET, 3600)
    assert stop is not None and stop.patch == {"spec": {"suspend": True}}
    assert workload_path(JOBSET) == "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ml/jobsets/train"
    assert stop_for(obj("jobset.x-k8s.io/v1alpha2", "JobSet", "t", suspend=True), 3600) is None


def test_kinds_with_no_deadline_to_set_are_suspended_through_their_own_field() -> None:
    for body, patch in (
        (obj("trainer.kubeflow.org/v1alpha1", "TrainJob", "t"), {"spec": {"suspend": True}}),
        (obj("kubeflow.org/v2beta1", "MPIJob", "m"), {"spec": {"runPolicy": {"suspend": True}}}),
        (obj("ray.io/v1", "RayCluster", "r"), {"spec": {"suspend": True}}),
    ):
        stop = stop_for(body, 3600)
        assert stop is not None and stop.patch == patch, body
        assert "suspended" in stop.message and stop.stoppable
    assert stop_for(obj("kubeflow.org/v2beta1", "MPIJob", "m", runPolicy={"suspend": True}),
                    3600) is None


def test_other_kinds_are_not_changed_and_the_gang_is_warned() -> None:
    for body in (obj("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "lws"),
                 obj("batch.volcano.sh/v1alpha1", "Job", "vc"),  # not a batch/v1 Job
                 obj("apps/v1", "ReplicaSet", "web")):
        stop = stop_for(body, 3600)
        assert stop is not None and stop.patch is None and not stop.stoppable, body
        assert "may recreate the pods" in stop.message
        event = stopped_event(JOB, stop, None)
        assert (event.type, event.reason) == ("Warning", NOT_STOPPED)


def test_the_event_says_whether_the_stop_landed() -> None:
    stop = stop_for(JOB, 60)
    assert isinstance(stop, WorkloadStop)
    landed = stopped_event(JOB, stop, Reply(200, {}))
    assert (landed.type, landed.reason) == ("Normal", STOPPED)
    refused = stopped_event(JOB, stop, Reply(403, {"reason": "Forbidden"}))
    assert (refused.type, refused.reason) == ("Warning", NOT_STOPPED)
    assert "403 Forbidden" in refused.message and "may recreate the pods" in refused.message
