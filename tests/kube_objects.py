"""Built-in workload objects as a user would write them, for the end-to-end tests.

Pods ask for a little CPU and no GPU, so they fit any kwok node next to other tests' pods;
with `complete_after` kwok ends each pod Succeeded that many seconds after it runs.
"""

from __future__ import annotations

from typing import Any

from phalanx.cluster.labels import COMPLETE_AFTER_ANNOTATION

PAUSE = "registry.k8s.io/pause:3.10"


def pod_template(
    labels: dict[str, str] | None = None,
    complete_after: int | None = None,
    scheduler: str = "default-scheduler",
    restart_policy: str = "Never",
) -> dict[str, Any]:
    annotations = {COMPLETE_AFTER_ANNOTATION: str(complete_after)} if complete_after else {}
    return {
        "metadata": {"labels": labels or {}, "annotations": annotations},
        "spec": {
            "schedulerName": scheduler,
            "restartPolicy": restart_policy,
            "containers": [
                {"name": "main", "image": PAUSE, "resources": {"requests": {"cpu": "100m"}}}
            ],
        },
    }


def job(
    name: str,
    parallelism: int,
    completions: int | None = None,
    complete_after: int | None = None,
    indexed: bool = False,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "parallelism": parallelism,
        "completions": parallelism if completions is None else completions,
        "backoffLimit": 0,
        "template": pod_template(complete_after=complete_after),
    }
    if indexed:
        spec["completionMode"] = "Indexed"
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


def replica_set(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": pod_template(labels, restart_policy="Always"),
        },
    }


def jobset(
    name: str, replicas: int, parallelism: int, scheduler: str = "default-scheduler"
) -> dict[str, Any]:
    """A JobSet of one replicated Job (`replicas` copies, each `parallelism` pods)."""
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {
            "replicatedJobs": [{
                "name": "workers",
                "replicas": replicas,
                "template": {"spec": {
                    "parallelism": parallelism,
                    "completions": parallelism,
                    "backoffLimit": 0,
                    "template": pod_template(scheduler=scheduler),
                }},
            }],
        },
    }


def leader_worker_set(
    name: str, replicas: int, size: int, scheduler: str = "default-scheduler"
) -> dict[str, Any]:
    """`replicas` groups of `size` pods (a leader and size - 1 workers)."""
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": size,
                "workerTemplate": pod_template(scheduler=scheduler, restart_policy="Always"),
            },
        },
    }


def train_job(name: str, nodes: int, runtime: str = "torch-distributed") -> dict[str, Any]:
    """A Kubeflow Trainer v2 TrainJob on one of the release's ClusterTrainingRuntimes."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {"name": runtime},
            "trainer": {"numNodes": nodes},
        },
    }
