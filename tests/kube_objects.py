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
