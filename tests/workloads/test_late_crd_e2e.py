"""A workload kind whose CRD is installed after the operator started (JobSet deployed after
Phalanx) gets its automatic gangs without a restart: discovery runs again every
`discovery_period_seconds` (1 s here) and watches the new kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from gang_checks import owned_by_workload, phalanx_group

from phalanx.cluster import LocalCluster
from phalanx.operator.main import Operator
from polling import eventually

pytestmark = pytest.mark.e2e


def test_a_jobset_crd_installed_after_the_operator_started_is_watched(
    workload_api_cluster: LocalCluster, upstream_namespace: str, phalanx_upstream: Operator,
    jobset_crds: Path,
) -> None:
    cluster, namespace = workload_api_cluster, upstream_namespace
    assert "JobSet" not in [w.kind for w in phalanx_upstream.optional_watches]
    cluster.install_crds(jobset_crds)
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "late", "labels": {"scheduling.phalanx.io/queue": "default"}},
        "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {
            "parallelism": 2, "completions": 2,
            "template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "registry.k8s.io/pause:3.10"}]}}}}}]},
    }  # fmt: skip
    cluster.apply([jobset], namespace=namespace)  # no JobSet controller: only its gang
    made = eventually(lambda: phalanx_group(cluster, namespace, "jobset-late"), 60)
    assert made, "no PodGroup for a JobSet whose CRD came after the operator"
    assert made["spec"]["minMember"] == 4
    owned_by_workload(cluster, namespace, "jobset-late", "jobset", "late")
