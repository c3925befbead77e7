"""Shared fixtures: one real local control plane per test session, started only when an
end-to-end test asks for it.

- `cluster` (session): a started `phalanx.cluster.LocalCluster` (etcd, kube-apiserver, kwok)
  with the Phalanx CRDs Established, the 32 nodes of examples/clusters/small.yaml Ready and
  the NetworkTopology `default` applied. Use `cluster.kubectl(...)`, `cluster.apply(...)`,
  `cluster.kubeconfig`, `cluster.start_scheduler()`. Tests that use it are marked e2e
  automatically (and should say `@pytest.mark.e2e` themselves).
- `small_cluster` (session): the description the nodes came from.
- `namespace` (function): a fresh namespace; its pods and PodGroups are deleted afterwards
  (there is no namespace controller to do it).
- `kubectl` (function): `kubectl(*args, input=None, check=True)` against the cluster.
- `api_client` (function, async): a kubernetes-asyncio ApiClient for the cluster;
  `api_client_factory()` gives more (an async context manager each).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from phalanx.cluster import ClusterDescription, LocalCluster, load_description
from phalanx.cluster.binaries import BinariesMissing, require_all

REPO = Path(__file__).resolve().parents[1]
SMALL_CLUSTER = REPO / "examples" / "clusters" / "small.yaml"
CLUSTER_FIXTURES = {"cluster", "namespace", "kubectl", "api_client", "api_client_factory"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses the real cluster is an e2e test, marked or not."""
    for item in items:
        if CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def small_cluster() -> ClusterDescription:
    return load_description(SMALL_CLUSTER)


@pytest.fixture(scope="session")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, small_cluster: ClusterDescription
) -> Iterator[LocalCluster]:
    try:
        require_all()
    except BinariesMissing as error:
        pytest.fail(f"{error}\nThe end-to-end tests need them: run `make tools` first.")
    local = LocalCluster(tmp_path_factory.mktemp("cluster"), die_with_parent=True)
    local.start()
    try:
        local.prepare(small_cluster)
        yield local
    finally:
        local.stop()
    leftovers = local.pids()
    if leftovers:
        pytest.fail(f"cluster processes still alive after stop: {leftovers}")


@pytest.fixture
def kubectl(cluster: LocalCluster) -> Callable[..., Any]:
    return cluster.kubectl


@pytest.fixture
def namespace(cluster: LocalCluster) -> Iterator[str]:
    name = f"t-{secrets.token_hex(4)}"
    cluster.kubectl("create", "namespace", name)
    yield name
    with contextlib.suppress(Exception):
        cluster.kubectl(
            "delete", "pods,podgroups.scheduling.phalanx.io", "--all", "-n", name,
            "--grace-period=0", "--force", "--wait=false", check=False,
        )
        cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def api_client_factory(
    cluster: LocalCluster,
) -> Callable[[], contextlib.AbstractAsyncContextManager[Any]]:
    from phalanx.cluster.client import api_client

    return lambda: api_client(cluster.kubeconfig)


@pytest.fixture
async def api_client(
    api_client_factory: Callable[[], contextlib.AbstractAsyncContextManager[Any]],
) -> AsyncIterator[Any]:
    async with api_client_factory() as api:
        yield api
