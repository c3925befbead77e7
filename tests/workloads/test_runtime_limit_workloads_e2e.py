"""Runtime limits (#31) where the shell meets other controllers, on the real control plane:

- a queue-labelled Job whose gang runs past its runtime limit is stopped whole: its pods are
  evicted and its Job controller fails it with reason DeadlineExceeded (Phalanx set its
  activeDeadlineSeconds), so no pod of it is made again;
- a JobSet, which has no deadline, is suspended instead, by its real controller; so are a
  TrainJob and a RayCluster; a PyTorchJob is failed by the training operator at the
  deadline Phalanx sets;
- Kubernetes' own PodGroups (Workload API) say what a Phalanx PodGroup says: the condition
  RuntimeLimitExceeded once evicted for the limit, and the condition ExpectedStart while
  waiting behind work with a limit (the time at the end of its message).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from gang_checks import (
    EXAMPLES,
    bound,
    condition,
    event_reasons,
    gpu_template,
    phalanx_group,
    pods,
)
from test_pytorchjob_e2e import pytorchjob
from test_raycluster_e2e import example as raycluster
from test_trainjob_e2e import trainjob
from test_upstream_e2e import UPSTREAM, members, upstream_group

from phalanx.cluster import LocalCluster
from phalanx.cluster.workload_controllers import Running
from phalanx.core.model.names import RUNTIME_LIMIT_ANNOTATION
from phalanx.operator.events import timestamp
from phalanx.operator.main import Operator
from pod_history import PodHistory
from polling import eventually, get_json

pytestmark = pytest.mark.e2e

LIMIT_SECONDS = 3
JOB_PODS = "batch.kubernetes.io/job-name=limited"


def moment(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def with_condition(
    cluster: LocalCluster, resource: str, namespace: str, kind: str
) -> dict[str, Any]:
    """The object `limited` of `resource` once its condition `kind` is True, else {}."""
    body: dict[str, Any] = get_json(cluster, resource, "limited", "-n", namespace)
    return body if condition(body, kind).get("status") == "True" else {}


def limited_job(parallelism: int) -> dict[str, Any]:
    """A Job that would replace evicted pods (backoffLimit 6) and has no deadline of its
    own: its limit is Phalanx's annotation."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "limited",
            "labels": {"scheduling.phalanx.io/queue": "default"},
            "annotations": {RUNTIME_LIMIT_ANNOTATION: str(LIMIT_SECONDS)},
        },
        "spec": {"parallelism": parallelism, "completions": parallelism, "backoffLimit": 6,
                 "template": gpu_template()},
    }


def test_a_job_past_its_runtime_limit_is_failed_by_its_controller_and_not_run_again(
    cluster: LocalCluster, namespace: str, phalanx: Operator, tmp_path: Path
) -> None:
    history = PodHistory(cluster, namespace, tmp_path / "pods.json")
    try:
        cluster.apply([limited_job(2)], namespace=namespace)
        assert eventually(lambda: len(bound(pods(cluster, namespace, JOB_PODS))) == 2, 60)

        job = eventually(lambda: with_condition(cluster, "job", namespace, "Failed"), 60)
        assert job, get_json(cluster, "job", "limited", "-n", namespace)
        assert condition(job, "Failed")["reason"] == "DeadlineExceeded", job["status"]
        assert job["spec"]["activeDeadlineSeconds"] == LIMIT_SECONDS
        assert eventually(lambda: not pods(cluster, namespace, JOB_PODS), 60)
    finally:
        history.stop()

    made = {name for name in history.names() if name.startswith("limited-")}
    assert len(made) == 2, made  # the two that ran; none made again after the eviction
    for name in made:  # told why before they went (by the eviction or the Job controller)
        seen = history.versions(name)
        assert any(c["type"] == "DisruptionTarget" and c["message"].startswith(
            f"phalanx: ran past its runtime limit of {LIMIT_SECONDS}s")
            for v in seen for c in v["status"].get("conditions", [])), seen
        assert seen[-1]["metadata"].get("deletionTimestamp"), seen[-1]

    group = phalanx_group(cluster, namespace, "job-limited")
    assert condition(group, "RuntimeLimitExceeded")["status"] == "True", group["status"]
    said = event_reasons(cluster, namespace, "PodGroup", "job-limited")
    assert {"RuntimeLimitExceeded", "WorkloadStopped"} <= said, said
    stopped = [e["message"] for e in get_json(cluster, "events", "-n", namespace)["items"]
               if e["reason"] == "WorkloadStopped"]
    assert stopped == [f"Job {namespace}/limited stopped: spec.activeDeadlineSeconds set to "
                       f"{LIMIT_SECONDS} (the gang's runtime limit), so its controller fails "
                       "it as past its deadline (DeadlineExceeded) and creates no pod again"], \
        stopped


def test_a_jobset_past_its_runtime_limit_is_suspended_and_not_run_again(
    cluster: LocalCluster, namespace: str, jobset_controller: Running, phalanx: Operator,
    tmp_path: Path,
) -> None:
    spec = {"parallelism": 2, "completions": 2, "backoffLimit": 0, "template": gpu_template()}
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "limited", "labels": {"scheduling.phalanx.io/queue": "default"},
                     "annotations": {RUNTIME_LIMIT_ANNOTATION: str(LIMIT_SECONDS)}},
        "spec": {"failurePolicy": {"maxRestarts": 3},  # a failed Job would start it again
                 "replicatedJobs": [{"name": "workers", "replicas": 1,
                                     "template": {"spec": spec}}]},
    }  # fmt: skip
    selector = "jobset.sigs.k8s.io/jobset-name=limited"
    history = PodHistory(cluster, namespace, tmp_path / "pods.json")
    try:
        cluster.apply([jobset], namespace=namespace)
        assert eventually(lambda: len(bound(pods(cluster, namespace, selector))) == 2, 60)

        body = eventually(lambda: with_condition(cluster, "jobset", namespace, "Suspended"), 60)
        assert body, get_json(cluster, "jobset", "limited", "-n", namespace)
        assert body["spec"]["suspend"] is True
        assert eventually(lambda: not pods(cluster, namespace, selector), 60)
    finally:
        history.stop()
    made = {name for name in history.names() if name.startswith("limited-")}
    assert len(made) == 2, made  # none made again
    said = event_reasons(cluster, namespace, "PodGroup", "jobset-limited")
    assert {"RuntimeLimitExceeded", "WorkloadStopped"} <= said, said


def limited(workload: dict[str, Any]) -> dict[str, Any]:
    """`workload` with a runtime limit of LIMIT_SECONDS and no topology to wait for."""
    workload["metadata"]["annotations"] = {RUNTIME_LIMIT_ANNOTATION: str(LIMIT_SECONDS)}
    return workload


def stopped_whole(
    cluster: LocalCluster, namespace: str, tmp_path: Path, workload: dict[str, Any],
    selector: str, count: int, stopped: Any,
) -> dict[str, Any]:
    """Apply `workload`, see its `count` pods run, then `stopped(body)` hold once its limit
    passes, its pods go and none is made again; returns its body then."""
    kind, name = workload["kind"].lower(), workload["metadata"]["name"]
    history = PodHistory(cluster, namespace, tmp_path / "pods.json")
    try:
        cluster.apply([workload], namespace=namespace)
        assert eventually(lambda: len(bound(pods(cluster, namespace, selector))) == count, 90)
        first = {p["metadata"]["name"] for p in pods(cluster, namespace, selector)}

        def done() -> dict[str, Any]:
            body = get_json(cluster, kind, name, "-n", namespace)
            return body if stopped(body) else {}

        body = eventually(done, 60)
        assert body, get_json(cluster, kind, name, "-n", namespace)
        assert eventually(lambda: not pods(cluster, namespace, selector), 60)
    finally:
        history.stop()
    again = {n for n in history.names() if n.startswith(f"{name}-")} - first
    assert not again, again  # nothing made again after the stop
    said = event_reasons(cluster, namespace, "PodGroup", f"{kind}-{name}")
    assert {"RuntimeLimitExceeded", "WorkloadStopped"} <= said, said
    return dict(body)


def test_a_pytorchjob_past_its_runtime_limit_is_failed_by_the_training_operator(
    cluster: LocalCluster, namespace: str, training_operator: Running, phalanx: Operator,
    tmp_path: Path,
) -> None:
    workload = limited(pytorchjob("limited", workers=1))
    body = stopped_whole(
        cluster, namespace, tmp_path, workload, "training.kubeflow.org/job-name=limited", 2,
        lambda b: condition(b, "Failed").get("status") == "True")
    assert body["spec"]["runPolicy"]["activeDeadlineSeconds"] == LIMIT_SECONDS
    assert "deadline" in condition(body, "Failed")["message"], body["status"]


def test_a_trainjob_past_its_runtime_limit_is_suspended(
    cluster: LocalCluster, namespace: str, kubeflow_controller: Running, phalanx: Operator,
    tmp_path: Path,
) -> None:
    cluster.apply(EXAMPLES / "workloads" / "trainjob.yaml", namespace=namespace)  # its runtime
    cluster.kubectl("delete", "trainjob", "llm", "-n", namespace, "--wait=false")
    body = stopped_whole(
        cluster, namespace, tmp_path, limited(trainjob("limited", 2)),
        "jobset.sigs.k8s.io/jobset-name=limited", 2,
        lambda b: condition(b, "Suspended").get("status") == "True")
    assert body["spec"]["suspend"] is True


def test_a_raycluster_past_its_runtime_limit_is_suspended(
    cluster: LocalCluster, namespace: str, kuberay_controller: Running, phalanx: Operator,
    tmp_path: Path,
) -> None:
    body = stopped_whole(
        cluster, namespace, tmp_path, limited(raycluster("limited", workers=2)),
        "ray.io/cluster=limited", 3, lambda b: b["spec"].get("suspend") is True)
    assert body["spec"]["suspend"] is True


def test_an_upstream_gang_past_its_limit_says_so_in_a_condition(
    workload_api_cluster: LocalCluster, upstream_namespace: str, phalanx_upstream: Operator
) -> None:
    cluster, namespace = workload_api_cluster, upstream_namespace
    group = upstream_group(cluster, "limited", 2, key=None)
    group["metadata"]["annotations"] = {RUNTIME_LIMIT_ANNOTATION: str(LIMIT_SECONDS)}
    cluster.apply([group, *members("limited", 2)], namespace=namespace)

    body = eventually(
        lambda: with_condition(cluster, UPSTREAM, namespace, "RuntimeLimitExceeded"), 60)
    assert body, get_json(cluster, UPSTREAM, "limited", "-n", namespace)
    said = condition(body, "RuntimeLimitExceeded")
    assert said["reason"] == "RuntimeLimitExceeded"
    assert said["message"].startswith(f"ran past its runtime limit of {LIMIT_SECONDS}s"), said
    assert condition(body, "PodGroupInitiallyScheduled")["status"] == "True"  # it did run
    assert eventually(lambda: not pods(cluster, namespace, "gang=limited"), 60)
    reasons = event_reasons(cluster, namespace, "PodGroup", "limited")
    assert "RuntimeLimitExceeded" in reasons and "WorkloadNotStopped" not in reasons, reasons


def test_an_upstream_gang_waiting_behind_limited_work_shows_its_expected_start(
    workload_api_cluster: LocalCluster, upstream_namespace: str,
    phalanx_upstream_estimating: Operator,
) -> None:
    cluster, namespace = workload_api_cluster, upstream_namespace
    nodes = len(get_json(cluster, "nodes")["items"])
    big = upstream_group(cluster, "big", nodes, key=None)
    big["metadata"]["annotations"] = {RUNTIME_LIMIT_ANNOTATION: "3600"}
    cluster.apply([big, *members("big", nodes)], namespace=namespace)

    def started() -> list[str]:
        running = [p["status"].get("startTime") for p in pods(cluster, namespace, "gang=big")
                   if p["status"].get("phase") == "Running"]
        return running if len(running) == nodes and all(running) else []

    starts = eventually(started, 120)
    assert starts, pods(cluster, namespace, "gang=big")
    cluster.apply([upstream_group(cluster, "next", 4, key=None), *members("next", 4)],
                  namespace=namespace)

    def expected() -> dict[str, Any]:
        body = get_json(cluster, UPSTREAM, "next", "-n", namespace)
        return condition(body, "ExpectedStart") if condition(
            body, "ExpectedStart").get("status") == "True" else {}

    said = eventually(expected, 60)
    assert said, get_json(cluster, UPSTREAM, "next", "-n", namespace)
    assert said["reason"] == "Estimated"
    at = min(moment(s) for s in starts) + 3600
    assert said["message"].startswith("expected to start by"), said
    assert f"(at {timestamp(at)})" in said["message"], (said, starts)
    assert said["message"].endswith(f"; waits for {namespace}/big"), said
    scheduled = condition(get_json(cluster, UPSTREAM, "next", "-n", namespace),
                          "PodGroupInitiallyScheduled")
    assert scheduled.get("status") == "False", scheduled  # it waits, as the condition says
