"""A workload's gang gets a runtime limit (#31), from the first of: Phalanx's annotation,
Kueue's max-exec-time label, the Job's activeDeadlineSeconds, its pod templates' (the
smallest); it lands in the PodGroup's spec.runtimeLimitSeconds."""

from __future__ import annotations

from typing import Any

import pytest
from test_translate import QUEUE, groups, job, jobset, pod_template, workload

from phalanx.core import InvalidObject
from phalanx.core.model.quantity import MAX_INT32
from phalanx.workloads import pod_groups_for

ANNOTATION = "scheduling.phalanx.io/runtime-limit-seconds"
KUEUE = "kueue.x-k8s.io/max-exec-time-seconds"


def deadline_template(seconds: int | None) -> dict[str, Any]:
    template = pod_template()
    if seconds is not None:
        template["spec"]["activeDeadlineSeconds"] = seconds
    return template


def limited_job(
    annotation: str | None = None, kueue: str | None = None, job_deadline: int | None = None,
    pod_deadline: int | None = None,
) -> dict[str, Any]:
    obj = job(parallelism=2)
    obj["spec"]["template"] = deadline_template(pod_deadline)
    if job_deadline is not None:
        obj["spec"]["activeDeadlineSeconds"] = job_deadline
    if annotation is not None:
        obj["metadata"]["annotations"][ANNOTATION] = annotation
    if kueue is not None:
        obj["metadata"]["labels"][KUEUE] = kueue
    return obj


def limit(obj: dict[str, Any]) -> dict[str, int | None]:
    return {name: spec.get("runtimeLimitSeconds") for name, spec in groups(obj).items()}


def test_no_source_no_limit() -> None:
    assert limit(limited_job()) == {"job-train": None}


def test_the_annotation_gives_the_limit() -> None:
    assert limit(limited_job(annotation="3600")) == {"job-train": 3600}


def test_kueues_max_exec_time_label_gives_the_limit() -> None:
    assert limit(limited_job(kueue="1800")) == {"job-train": 1800}


def test_a_jobs_active_deadline_gives_the_limit() -> None:
    assert limit(limited_job(job_deadline=900)) == {"job-train": 900}


def test_the_pod_templates_active_deadline_gives_the_limit() -> None:
    assert limit(limited_job(pod_deadline=600)) == {"job-train": 600}


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        ({"annotation": "3600", "kueue": "60", "job_deadline": 30, "pod_deadline": 10}, 3600),
        ({"kueue": "1800", "job_deadline": 30, "pod_deadline": 10}, 1800),
        ({"job_deadline": 900, "pod_deadline": 10}, 900),
        ({"pod_deadline": 600}, 600),
    ],
    ids=["annotation-first", "then-kueue", "then-the-job", "then-the-pods"],
)
def test_the_first_source_in_order_wins_even_when_a_later_one_is_smaller(
    sources: dict[str, Any], expected: int
) -> None:
    assert limit(limited_job(**sources)) == {"job-train": expected}


def test_a_jobset_takes_the_smallest_deadline_of_its_gangs_jobs_then_pods() -> None:
    obj = jobset()
    leader, workers = obj["spec"]["replicatedJobs"]
    leader["template"]["spec"]["template"] = deadline_template(500)
    workers["template"]["spec"]["template"] = deadline_template(700)
    assert limit(obj) == {"jobset-train": 500}
    workers["template"]["spec"]["activeDeadlineSeconds"] = 2000  # a Job's wins over pods'
    assert limit(obj) == {"jobset-train": 2000}


def test_a_jobset_gang_per_replicated_job_takes_its_own_jobs_deadline() -> None:
    obj = jobset({"scheduling.phalanx.io/gang-scope": "replicated-job"})
    leader, workers = obj["spec"]["replicatedJobs"]
    leader["template"]["spec"]["activeDeadlineSeconds"] = 100
    workers["template"]["spec"]["template"] = deadline_template(300)
    assert limit(obj) == {"jobset-train-leader": 100, "jobset-train-workers": 300}


def test_a_leaderworkerset_takes_the_smaller_of_leader_and_worker_deadlines() -> None:
    spec = {"replicas": 2, "leaderWorkerTemplate": {
        "size": 4, "leaderTemplate": deadline_template(1200),
        "workerTemplate": deadline_template(800)}}  # fmt: skip
    found = limit(workload("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1", spec))
    assert found == {"lws-train-0": 800, "lws-train-1": 800}


def test_a_pytorchjob_takes_the_smallest_over_its_replica_templates() -> None:
    spec = {"pytorchReplicaSpecs": {
        "Master": {"replicas": 1, "template": deadline_template(None)},
        "Worker": {"replicas": 3, "template": deadline_template(400)}}}  # fmt: skip
    assert limit(workload("PyTorchJob", "kubeflow.org/v1", spec)) == {"pytorchjob-train": 400}


def test_a_trainjob_takes_the_annotation_or_kueues_label() -> None:
    obj = workload("TrainJob", "trainer.kubeflow.org/v1alpha1", {"trainer": {"numNodes": 2}},
                   {ANNOTATION: "7200"})
    assert limit(obj) == {"trainjob-train": 7200}
    obj["metadata"]["annotations"] = {}
    obj["metadata"]["labels"] = {**QUEUE, KUEUE: "60"}
    assert limit(obj) == {"trainjob-train": 60}


def test_a_deadline_past_int32_is_held_as_the_most_a_pod_group_takes() -> None:
    assert limit(limited_job(job_deadline=10**12)) == {"job-train": MAX_INT32}


@pytest.mark.parametrize(
    ("sources", "field"),
    [
        ({"annotation": "0"}, f"metadata.annotations[{ANNOTATION}]"),
        ({"annotation": "1h"}, f"metadata.annotations[{ANNOTATION}]"),
        ({"kueue": "0"}, f"metadata.labels[{KUEUE}]"),
        ({"kueue": "soon"}, f"metadata.labels[{KUEUE}]"),
        ({"job_deadline": 0}, "spec.activeDeadlineSeconds"),
    ],
)
def test_a_bad_limit_names_its_source(sources: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidObject) as raised:
        pod_groups_for(limited_job(**sources))
    assert raised.value.field == field
