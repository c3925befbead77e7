"""Kubernetes' own PodGroup with `spec.resourceClaims` (scheduling.k8s.io/v1beta1, gate
DRAWorkloadResourceClaims) on the real 1.37 control plane: kube-controller-manager makes
one claim for the group from its template, every pod's matching entry resolves to it, and
the operator (binder mode) allocates it once, reserves it for every pod and binds them
all (its devices are one node's, so all on that node)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dra_objects import allocated_nodes, claim_template, reserved_for
from test_dra_e2e import DRA_CLUSTER, bound, claims, operator, pods

from conftest import running_cluster
from phalanx.cluster import LocalCluster, load_description
from polling import eventually, get_json

pytestmark = pytest.mark.e2e

ENTRY = {"name": "gpus", "resourceClaimTemplateName": "h100x2"}


@pytest.fixture(scope="module")
def cluster_137(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    yield from running_cluster(tmp_path_factory.mktemp("dra-workload"),
                               load_description(DRA_CLUSTER), workload_api=True)


def group(name: str, size: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"schedulingPolicy": {"gang": {"minCount": size}},
                     "resourceClaims": [ENTRY]}}


def member(name: str, group_name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"schedulerName": "phalanx", "restartPolicy": "Never",
                     "tolerations": [{"operator": "Exists"}],
                     "schedulingGroup": {"podGroupName": group_name},
                     "resourceClaims": [ENTRY],
                     "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "1"},
                                                   "claims": [{"name": "gpus"}]}}]}}


def test_a_podgroups_claim_is_made_once_allocated_once_and_shared_by_its_pods(
        cluster_137: LocalCluster, tmp_path: Path) -> None:
    ns = f"dra-group-{secrets.token_hex(3)}"
    cluster_137.kubectl("create", "namespace", ns)
    cluster_137.apply([claim_template("h100x2", count=2), group("train", 3),
                       *(member(f"train-{i}", "train") for i in range(3))], ns)
    with operator(cluster_137):
        placed = eventually(lambda: bound(cluster_137, ns, 3), timeout=90)
        assert placed, (pods(cluster_137, ns), claims(cluster_137, ns))
    (claim,) = claims(cluster_137, ns)  # one for the group, none per pod
    owner = claim["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("PodGroup", "train")
    assert sorted(reserved_for(claim)) == sorted(placed)
    assert allocated_nodes(claim) == set(placed.values())  # all three on its node
    assert len(claim["status"]["allocation"]["devices"]["results"]) == 2
    statuses = get_json(cluster_137, "podgroups.scheduling.k8s.io", "train", "-n", ns)[
        "status"]["resourceClaimStatuses"]
    assert statuses == [{"name": "gpus", "resourceClaimName": claim["metadata"]["name"]}]
    cluster_137.kubectl("delete", "namespace", ns, "--wait=false")
