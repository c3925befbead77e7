"""The manifests against a real kube-apiserver: they apply cleanly, and the operator's
ServiceAccount can do what scheduling needs and nothing dangerous (RBAC is enforced)."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from phalanx.cluster import LocalCluster

from .rendering import MANIFESTS, render

ACCOUNT = "system:serviceaccount:phalanx-system:phalanx"
pytestmark = pytest.mark.e2e


CERT_MANAGER_KINDS = {"Issuer", "Certificate"}  # manifests/webhook/cert-manager


def test_whole_kustomization_passes_server_side_dry_run(installed_rbac: LocalCluster) -> None:
    # All but cert-manager's two objects: the local cluster has no cert-manager CRDs
    # (tests/webhooks/test_manifests.py checks those two against the Service and Secret).
    objects = render(MANIFESTS)
    served = [o for o in objects if o["kind"] not in CERT_MANAGER_KINDS]
    assert sorted(o["kind"] for o in objects if o not in served) == sorted(CERT_MANAGER_KINDS)
    result = installed_rbac.kubectl("apply", "--dry-run=server", "-f", "-",
                                    input=yaml.safe_dump_all(served), check=False)
    assert result.returncode == 0, result.stderr
    applied = [line for line in result.stdout.splitlines() if "(server dry run)" in line]
    assert len(applied) == len(served)
    # The namespace enforces the "restricted" Pod Security Standard; the Deployment's pods
    # must meet it, or the API server would warn here (and refuse the pods later).
    assert "PodSecurity" not in result.stderr


def can_i(cluster: LocalCluster, verb: str, resource: str, *extra: str) -> bool:
    result: subprocess.CompletedProcess[str] = cluster.kubectl(
        "auth", "can-i", verb, resource, f"--as={ACCOUNT}", *extra, check=False
    )
    answer = result.stdout.strip()
    assert answer in ("yes", "no"), result.stderr
    return answer == "yes"


@pytest.mark.parametrize(
    ("verb", "resource", "extra"),
    [
        ("get", "secrets", ("-n", "phalanx-system")),
        ("list", "secrets", ("--all-namespaces",)),
        ("get", "configmaps", ("-n", "phalanx-system")),
        ("create", "pods", ("-n", "default")),
        ("update", "pods", ("-n", "default")),
        ("delete", "nodes", ()),
        ("escalate", "clusterroles", ()),
        ("bind", "clusterroles", ()),
        ("create", "clusterrolebindings", ()),
        ("impersonate", "serviceaccounts", ("-n", "phalanx-system")),
        ("create", "serviceaccounts/token", ("-n", "phalanx-system")),
        ("delete", "queues.scheduling.phalanx.io", ()),
        ("delete", "networktopologies.scheduling.phalanx.io", ()),
        ("create", "leases.coordination.k8s.io", ("-n", "default")),
        ("update", "leases.coordination.k8s.io/someone-else", ("-n", "phalanx-system")),
    ],
)
def test_service_account_cannot(
    installed_rbac: LocalCluster, verb: str, resource: str, extra: tuple[str, ...]
) -> None:
    assert not can_i(installed_rbac, verb, resource, *extra)


@pytest.mark.parametrize(
    ("verb", "resource", "extra"),
    [
        ("list", "nodes", ()),
        ("watch", "pods", ("--all-namespaces",)),
        ("create", "pods", ("--subresource=binding", "-n", "default")),
        ("create", "pods", ("--subresource=eviction", "-n", "default")),
        ("patch", "pods", ("--subresource=status", "-n", "default")),
        ("patch", "pods", ("-n", "default")),
        ("delete", "pods", ("-n", "default")),
        ("watch", "podgroups.scheduling.phalanx.io", ("--all-namespaces",)),
        ("patch", "podgroups.scheduling.phalanx.io", ("--subresource=status", "-n", "default")),
        ("create", "queues.scheduling.phalanx.io", ()),
        ("patch", "networktopologies.scheduling.phalanx.io", ("--subresource=status",)),
        ("list", "priorityclasses.scheduling.k8s.io", ()),
        ("create", "events", ("-n", "default")),
        ("watch", "customresourcedefinitions.apiextensions.k8s.io", ()),
        ("create", "leases.coordination.k8s.io", ("-n", "phalanx-system")),
        ("update", "leases.coordination.k8s.io/phalanx-leader", ("-n", "phalanx-system")),
    ],
)
def test_service_account_can(
    installed_rbac: LocalCluster, verb: str, resource: str, extra: tuple[str, ...]
) -> None:
    assert can_i(installed_rbac, verb, resource, *extra)
