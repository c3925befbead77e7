"""Queue-labelled workloads become PodGroups the operator owns, and their pods (labelled as
the real controllers label them) join those PodGroups."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from crd_schema import validate
from phalanx.core import InvalidObject, snapshot_from_objects
from phalanx.workloads import pod_groups_for

QUEUE = {"scheduling.phalanx.io/queue": "team-a"}


def workload(
    kind: str, api_version: str, spec: dict[str, Any], annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": "train",
            "namespace": "ml",
            "uid": "uid-1",
            "labels": dict(QUEUE),
            "annotations": annotations or {},
        },
        "spec": spec,
    }


def pod_template(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"annotations": annotations or {}},
        "spec": {"schedulerName": "phalanx", "containers": [{"name": "c", "image": "x"}]},
    }


def job(parallelism: int = 4, **extra: Any) -> dict[str, Any]:
    spec = {"parallelism": parallelism, "template": pod_template(), **extra}
    return workload("Job", "batch/v1", spec)


def jobset(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    def replicated(name: str, replicas: int, parallelism: int) -> dict[str, Any]:
        job_spec = {"parallelism": parallelism, "completions": parallelism}
        return {
            "name": name,
            "replicas": replicas,
            "template": {"spec": {**job_spec, "template": pod_template()}},
        }

    spec = {"replicatedJobs": [replicated("leader", 1, 1), replicated("workers", 2, 4)]}
    return workload("JobSet", "jobset.x-k8s.io/v1alpha2", spec, annotations)


def groups(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = pod_groups_for(obj)
    for group in found:
        validate(group)  # what the API server would accept
    return {g["metadata"]["name"]: g["spec"] for g in found}


def test_a_job_is_one_gang_of_its_parallelism_owned_by_the_job() -> None:
    [group] = pod_groups_for(job(parallelism=4))
    assert group["metadata"]["name"] == "job-train"
    assert group["spec"] == {"minMember": 4, "queue": "team-a"}
    [owner] = group["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Job", "train", "uid-1")
    assert owner["apiVersion"] == "batch/v1" and owner["controller"] is True


def test_a_job_never_runs_more_pods_than_completions() -> None:
    assert groups(job(parallelism=4, completions=2))["job-train"]["minMember"] == 2


def test_a_job_with_kubernetes_own_scheduling_gets_no_second_gang() -> None:
    """Kubernetes 1.37: the Job controller makes the PodGroup of a Job with spec.scheduling,
    and that is the one gang; a queue label on it must not add Phalanx's own."""
    gang = {"schedulingPolicy": {"gang": {"minCount": 4}}}
    assert pod_groups_for(job(4, scheduling=gang)) == []
    assert len(pod_groups_for(job(4))) == 1
    cron = job(4, scheduling=gang)  # a CronJob's Job: Kubernetes makes it no Workload
    cron["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "c",
         "controller": True}]
    assert len(pod_groups_for(cron)) == 1


def test_a_workload_without_the_queue_label_gets_no_gang() -> None:
    obj = job()
    obj["metadata"]["labels"] = {}
    assert pod_groups_for(obj) == []


def test_a_jobsets_own_jobs_get_no_gang_of_their_own() -> None:
    obj = job()
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "x", "uid": "u",
         "controller": True}
    ]  # fmt: skip
    assert pod_groups_for(obj) == []


def test_a_jobset_is_one_gang_of_all_its_jobs_pods() -> None:
    assert groups(jobset()) == {"jobset-train": {"minMember": 9, "queue": "team-a"}}


def test_a_jobset_can_ask_for_one_gang_per_replicated_job() -> None:
    found = groups(jobset({"scheduling.phalanx.io/gang-scope": "replicated-job"}))
    assert {name: spec["minMember"] for name, spec in found.items()} == {
        "jobset-train-leader": 1,
        "jobset-train-workers": 8,
    }


def test_a_leaderworkerset_is_one_gang_per_group() -> None:
    spec = {
        "replicas": 2,
        "leaderWorkerTemplate": {
            "size": 4,
            "leaderTemplate": pod_template(),
            "workerTemplate": pod_template(),
        },
    }
    found = groups(workload("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1", spec))
    assert {name: s["minMember"] for name, s in found.items()} == {
        "lws-train-0": 4,
        "lws-train-1": 4,
    }


def test_a_pytorchjob_is_its_master_and_workers() -> None:
    spec: dict[str, Any] = {
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "template": pod_template()},
            "Worker": {"replicas": 3, "template": pod_template()},
        }
    }
    obj = workload("PyTorchJob", "kubeflow.org/v1", spec)
    assert groups(obj)["pytorchjob-train"]["minMember"] == 4
    obj["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": 2}}
    assert groups(obj)["pytorchjob-train"]["minMember"] == 2


def test_a_trainjob_is_its_trainer_nodes() -> None:
    obj = workload("TrainJob", "trainer.kubeflow.org/v1alpha1", {"trainer": {"numNodes": 4}})
    assert groups(obj)["trainjob-train"]["minMember"] == 4
    del obj["spec"]["trainer"]
    with pytest.raises(InvalidObject, match=r"spec\.trainer\.numNodes"):
        pod_groups_for(obj)
    obj["metadata"]["annotations"]["scheduling.phalanx.io/min-member"] = "3"
    assert groups(obj)["trainjob-train"]["minMember"] == 3


def test_topology_annotations_become_the_gangs_topology() -> None:
    obj = job()
    obj["metadata"]["annotations"] = {
        "scheduling.phalanx.io/topology-required": "block",
        "scheduling.phalanx.io/topology-subgroup-size": "2",
        "scheduling.phalanx.io/topology-subgroup-level": "rack",
        "scheduling.phalanx.io/network-topology": "fabric",
        "scheduling.phalanx.io/schedule-timeout-seconds": "600",
    }
    assert groups(obj)["job-train"]["scheduleTimeoutSeconds"] == 600
    assert groups(obj)["job-train"]["topology"] == {
        "required": "block",
        "networkTopology": "fabric",
        "subGroup": {"size": 2, "required": "rack"},
    }


def test_kueues_topology_annotations_on_the_pod_template_are_honoured() -> None:
    obj = job()
    leaf = "network.topology.nvidia.com/leaf"
    obj["spec"]["template"]["metadata"]["annotations"] = {
        "kueue.x-k8s.io/podset-required-topology": leaf
    }
    assert groups(obj)["job-train"]["topology"] == {"requiredNodeLabel": leaf}
    obj["spec"]["template"]["metadata"]["annotations"] = {
        "kueue.x-k8s.io/podset-preferred-topology": leaf
    }
    assert groups(obj)["job-train"]["topology"] == {"preferredNodeLabel": leaf}


def test_two_levels_asked_at_once_are_an_error_naming_them() -> None:
    obj = job()
    obj["metadata"]["annotations"] = {
        "scheduling.phalanx.io/topology-required": "rack",
        "kueue.x-k8s.io/podset-preferred-topology": "network.topology.nvidia.com/leaf",
    }
    with pytest.raises(InvalidObject, match="preferredNodeLabel"):
        pod_groups_for(obj)


@pytest.mark.parametrize(
    ("annotation", "value"),
    [
        ("scheduling.phalanx.io/gang-scope", "job"),
        ("scheduling.phalanx.io/min-member", "zero"),
        ("scheduling.phalanx.io/topology-subgroup-size", "2"),
        ("scheduling.phalanx.io/schedule-timeout-seconds", "1.5"),
        # found by tests/workloads/test_translate_fuzz.py
        ("scheduling.phalanx.io/min-member", "\u00b2"),  # isdigit() said yes, int() raised
        ("scheduling.phalanx.io/topology-required", "Rack 1"),  # the API server refused the
        ("scheduling.phalanx.io/topology-subgroup-level", "-"),  # PodGroup: nobody was told
    ],
)
def test_bad_annotations_name_themselves(annotation: str, value: str) -> None:
    obj = jobset({annotation: value})
    with pytest.raises(InvalidObject, match=r"scheduling\.phalanx\.io/"):
        pod_groups_for(obj)


def test_the_pods_the_jobset_controller_creates_join_the_gang() -> None:
    """Labels as JobSet v0.8 puts them on a child Job's pods."""
    [group] = pod_groups_for(jobset())
    group = copy.deepcopy(group)
    labels = {
        "batch.kubernetes.io/job-name": "train-workers-0",
        "job-name": "train-workers-0",
        "jobset.sigs.k8s.io/jobset-name": "train",
        "jobset.sigs.k8s.io/replicatedjob-name": "workers",
        "jobset.sigs.k8s.io/job-index": "0",
    }
    pod = {
        "kind": "Pod",
        "metadata": {"name": "train-workers-0-0-abcde", "namespace": "ml", "labels": labels},
        "spec": {"schedulerName": "phalanx", "containers": [{"name": "c"}]},
    }
    snapshot = snapshot_from_objects([group, pod], strict=True)
    assert snapshot.pods[0].group == "jobset-train"
    assert snapshot.index.groups["ml/jobset-train"].min_member == 9  # type: ignore[index]


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "workloads"


@pytest.mark.parametrize(
    ("example", "expected"),
    [
        ("job.yaml", {"job-train": 4}),
        ("jobset.yaml", {"jobset-train": 5}),
        ("leaderworkerset.yaml", {"lws-serve-0": 4, "lws-serve-1": 4}),
        ("pytorchjob.yaml", {"pytorchjob-ddp": 4}),
        ("trainjob.yaml", {"trainjob-llm": 4}),
        ("job-workload-api.yaml", {}),  # no queue label: Kubernetes' own PodGroup instead
    ],
)
def test_the_example_workloads_make_the_gangs_their_comments_promise(
    example: str, expected: dict[str, int]
) -> None:
    objects = list(yaml.safe_load_all((EXAMPLES / example).read_text()))
    found: dict[str, int] = {}
    for obj in objects:
        obj["metadata"]["namespace"], obj["metadata"]["uid"] = "demo", "uid-1"
        found.update({name: spec["minMember"] for name, spec in groups(obj).items()})
    assert found == expected


def test_a_kueue_annotation_that_is_no_string_names_itself() -> None:
    """A pod template of a custom resource (PyTorchJob) may hold any JSON; a list there
    raised TypeError (unhashable) (found by tests/workloads/test_translate_fuzz.py)."""
    obj = job()
    obj["spec"]["template"]["metadata"]["annotations"] = {
        "kueue.x-k8s.io/podset-required-topology": ["rack"]
    }
    with pytest.raises(InvalidObject, match=r"podset-required-topology.*expected a node label"):
        pod_groups_for(obj)


def test_a_gang_larger_than_a_podgroup_holds_is_refused() -> None:
    """2^31-1 replicas of a Job of 4: a PodGroup the CRD refuses (minMember is int32)."""
    obj = jobset()
    obj["spec"]["replicatedJobs"][1]["replicas"] = 2**31 - 1
    with pytest.raises(InvalidObject) as caught:
        pod_groups_for(obj)
    assert caught.value.field == "spec" and "minMember" in caught.value.message


def test_a_count_past_int32_names_its_own_field() -> None:
    """Not the whole spec, as for a gang that only adds up past a PodGroup's minMember."""
    with pytest.raises(InvalidObject) as caught:
        pod_groups_for(job(parallelism=2**31))
    assert caught.value.field == "spec.parallelism"


def test_a_leaderworkerset_of_more_groups_than_a_cluster_holds_is_refused() -> None:
    """The API allows 2^31-1 replicas; making a PodGroup for each never ended (found by
    tests/workloads/test_translate_fuzz.py)."""
    spec = {"replicas": 2**31 - 1, "leaderWorkerTemplate": {"size": 1}}
    with pytest.raises(InvalidObject) as caught:
        pod_groups_for(workload("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1", spec))
    assert caught.value.field == "spec.replicas"
