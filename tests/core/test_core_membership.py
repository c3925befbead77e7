"""Pods of a Job, JobSet, LeaderWorkerSet or Kubeflow job join their gang by the labels
their controller puts on them, and only when that gang exists."""

from __future__ import annotations

from typing import Any

from phalanx.core import snapshot_from_objects
from phalanx.core.parse import parse_pod
from phalanx.core.parse.membership import implied_groups

JOB = {"batch.kubernetes.io/job-name": "train-workers-0", "job-name": "train-workers-0"}
JOBSET = {
    "jobset.sigs.k8s.io/jobset-name": "train",
    "jobset.sigs.k8s.io/replicatedjob-name": "workers",
}


def pod(labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml", "labels": labels},
        "spec": {"schedulerName": "phalanx", "containers": [{"name": "c"}], **spec},
    }


def group(name: str) -> dict[str, Any]:
    return {
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"minMember": 1},
    }


def group_of(*objects: dict[str, Any]) -> str | None:
    snapshot = snapshot_from_objects(objects, strict=True)
    return snapshot.pods[0].group


def test_a_jobset_pod_points_at_its_replicated_job_then_jobset_then_job() -> None:
    assert implied_groups({**JOB, **JOBSET}) == (
        "jobset-train-workers",
        "jobset-train",
        "job-train-workers-0",
    )


def test_a_pod_joins_the_first_implied_group_that_exists() -> None:
    labels = {**JOB, **JOBSET}
    assert (
        group_of(pod(labels), group("job-train-workers-0"), group("jobset-train")) == "jobset-train"
    )
    assert group_of(pod(labels), group("job-train-workers-0")) == "job-train-workers-0"


def test_a_pod_of_a_workload_without_a_gang_stays_alone() -> None:
    assert group_of(pod({**JOB, **JOBSET})) is None


def test_a_label_naming_a_group_wins_over_the_controller_labels() -> None:
    labels = {**JOB, "scheduling.phalanx.io/pod-group": "mine"}
    assert parse_pod(pod(labels)).implied_groups == ()
    assert group_of(pod(labels), group("job-train-workers-0")) == "mine"


def test_kubernetes_scheduling_group_names_the_group() -> None:
    obj = pod(JOB, schedulingGroup={"podGroupName": "upstream"})
    assert parse_pod(obj).group == "upstream"


def test_leaderworkerset_pods_form_one_gang_per_group_index() -> None:
    labels = {
        "leaderworkerset.sigs.k8s.io/name": "serve",
        "leaderworkerset.sigs.k8s.io/group-index": "1",
    }
    assert implied_groups(labels) == ("lws-serve-1",)


def test_a_trainjob_gang_is_its_trainer_nodes_only() -> None:
    node = {"jobset.sigs.k8s.io/jobset-name": "tj", "jobset.sigs.k8s.io/replicatedjob-name": "node"}
    init = {**node, "jobset.sigs.k8s.io/replicatedjob-name": "dataset-initializer"}
    assert implied_groups(node)[0] == "trainjob-tj"
    assert "trainjob-tj" not in implied_groups(init)


def test_pytorchjob_pods_but_not_other_kubeflow_kinds() -> None:
    labels = {
        "training.kubeflow.org/job-name": "pt",
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
    }
    assert implied_groups(labels) == ("pytorchjob-pt",)
    tf = {**labels, "training.kubeflow.org/operator-name": "tfjob-controller"}
    assert implied_groups(tf) == ()


def test_a_jobs_phalanx_gang_wins_over_the_basic_group_kubernetes_gives_every_job() -> None:
    """Kubernetes 1.37 puts every Job's pods in a PodGroup of its own (basic unless the Job
    asks for a gang); a queue-labelled Job's Phalanx gang, where it exists, holds them."""
    upstream = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                "metadata": {"name": "train-pg", "namespace": "ml"},
                "spec": {"schedulingPolicy": {"basic": {}}}}
    member = pod(JOB, schedulingGroup={"podGroupName": "train-pg"})
    assert group_of(member, upstream, group("job-train-workers-0")) == "job-train-workers-0"
    assert group_of(member, upstream) == "train-pg"  # no Phalanx gang: Kubernetes' group
