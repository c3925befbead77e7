"""Fixtures of the deploy tests: the manifests rendered once, the RBAC objects installed."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from .rendering import MANIFESTS, Obj, render

if TYPE_CHECKING:
    from phalanx.cluster import LocalCluster

RBAC_KINDS = {
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
}


@pytest.fixture(scope="session")
def rendered() -> list[Obj]:
    return render(MANIFESTS)


@pytest.fixture(scope="session")
def installed_rbac(cluster: LocalCluster) -> LocalCluster:
    """The namespace, ServiceAccount and roles of manifests/, applied for real."""
    cluster.apply([o for o in render(MANIFESTS) if o["kind"] in RBAC_KINDS])
    return cluster
