"""Runtime limits (#31) where the shell meets other controllers, on the real control plane:

- a queue-labelled Job whose gang runs past its runtime limit is stopped whole: its pods are
  evicted and its Job controller fails it with reason DeadlineExceeded (Phalanx set its
  activeDeadlineSeconds), so no pod of it is made again;
- a JobSet, which has no deadline, is suspended instead, by its real controller;
- Kubernetes' own PodGroups (Workload API) say what a Phalanx PodGroup says: the condition
  RuntimeLimitExceeded once evicted for the limit, and the condition ExpectedStart while
  waiting behind work with a limit (the time at the end of its message).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from gang_checks import bound, condition, event_reasons, gpu_template, phalanx_group, pods
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

        def failed() -> dict[str, Any]:
            job = get_json(cluster, "job", "limited", "-n", namespace)
            return job if condition(job, "Failed").get("status") == "True" else {}

        job = eventually(failed, 60)
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

        def suspended() -> dict[str, Any]:
            body = get_json(cluster, "jobset", "limited", "-n", namespace)
            return body if condition(body, "Suspended").get("status") == "True" else {}

        body = eventually(suspended, 60)
        assert body, get_json(cluster, "jobset", "limited", "-n", namespace)
        assert body["spec"]["suspend"] is True
        assert eventually(lambda: not pods(cluster, namespace, selector), 60)
    finally:
        history.stop()
    made = {name for name in history.names() if name.startswith("limited-")}
    assert len(made) == 2, made  # none made again
    said = event_reasons(cluster, namespace, "PodGroup", "jobset-limited")
    assert {"RuntimeLimitExceeded", "WorkloadStopped"} <= said, said


def test_an_upstream_gang_past_its_limit_says_so_in_a_condition(
    workload_api_cluster: LocalCluster, upstream_namespace: str, phalanx_upstream: Operator
) -> None:
    cluster, namespace = workload_api_cluster, upstream_namespace
    group = upstream_group(cluster, "limited", 2, key=None)
    group["metadata"]["annotations"] = {RUNTIME_LIMIT_ANNOTATION: str(LIMIT_SECONDS)}
    cluster.apply([group, *members("limited", 2)], namespace=namespace)

    def exceeded() -> dict[str, Any]:
        body = get_json(cluster, UPSTREAM, "limited", "-n", namespace)
        return body if condition(body, "RuntimeLimitExceeded").get("status") == "True" else {}

    body = eventually(exceeded, 60)
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
