"""Phalanx running in-process against the real clusters, for the automatic-gang and
Workload API end-to-end tests (one fixture per cluster)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from operator_thread import operator_in_thread
from phalanx.cluster import LocalCluster
from phalanx.config import Settings
from phalanx.operator.kube.client import load_configuration
from phalanx.operator.main import Operator

FAST = Settings(debounce_seconds=0.1, max_delay_seconds=0.5, cycle_period_seconds=1.0,
                partial_grace_seconds=5.0, discovery_period_seconds=1.0)


def running_operator(
    cluster: LocalCluster, name: str, settings: Settings = FAST
) -> Iterator[Operator]:
    async def make() -> Operator:
        return Operator(await load_configuration(str(cluster.kubeconfig)), settings)

    with operator_in_thread(make, name) as operator:
        yield operator
    assert operator.loop.errors == 0


@pytest.fixture
def phalanx(cluster: LocalCluster) -> Iterator[Operator]:
    """The operator on `cluster`, started after the test's CRDs and controllers are in."""
    yield from running_operator(cluster, "phalanx-workloads")


@pytest.fixture
def phalanx_upstream(workload_api_cluster: LocalCluster) -> Iterator[Operator]:
    """The operator on the cluster that serves Kubernetes' Workload API."""
    yield from running_operator(workload_api_cluster, "phalanx-upstream")


@pytest.fixture
def phalanx_upstream_estimating(workload_api_cluster: LocalCluster) -> Iterator[Operator]:
    """The operator on the Workload API cluster, estimating starts every second (#31)."""
    settings = FAST.model_copy(update={"estimate_interval_seconds": 1.0})
    yield from running_operator(workload_api_cluster, "phalanx-estimating", settings)


@pytest.fixture
def upstream_namespace(workload_api_cluster: LocalCluster) -> Iterator[str]:
    name = f"t-{secrets.token_hex(4)}"
    workload_api_cluster.kubectl("create", "namespace", name)
    yield name
    workload_api_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)
    workload_api_cluster.kubectl(
        "delete", "pods", "--all", "-n", name, "--grace-period=0", "--force", "--wait=false",
        check=False,
    )
