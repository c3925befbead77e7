"""Shared fixtures: one real local control plane per test session, started only when an
end-to-end test asks for it.

- `cluster` (session): a started `phalanx.cluster.LocalCluster` (etcd, kube-apiserver,
  kube-controller-manager, kwok) with the Phalanx CRDs Established, the 32 nodes of
  examples/clusters/small.yaml Ready and the NetworkTopology `default` applied. Use
  `cluster.kubectl(...)`, `cluster.apply(...)`, `cluster.kubeconfig`. Tests that use it are
  marked e2e automatically (and should say `@pytest.mark.e2e` themselves).
- `kube_scheduler` (function): the real kube-scheduler running on `cluster` for the test
  (pods with `schedulerName: default-scheduler`, the default, get bound); stopped after it.
- `workload_api_cluster` (session): a second cluster like `cluster`, started only when a test
  asks for it, with Kubernetes v1.36's Workload API on (scheduling.k8s.io/v1alpha2 Workload
  and PodGroup served; the alpha gates on kube-apiserver, kube-controller-manager and
  kube-scheduler, so the Job controller makes a Workload and PodGroup per gang-able Job).
- `workload_api_kube_scheduler` (function): kube-scheduler on that cluster, with the gates.
- `jobset_controller`, `lws_controller`, `kubeflow_controller`, `training_operator`,
  `kuberay_controller`, `mpi_operator` (session): the real workload controllers on
  `cluster` (tests/controller_fixtures.py).
- `small_cluster` (session): the description the nodes came from.
- `namespace` (function): a fresh namespace on `cluster`, deleted afterwards (the namespace
  controller deletes what is in it; its pods and PodGroups are deleted at once).
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
from hypothesis import HealthCheck, settings

from controller_fixtures import (  # noqa: F401 (fixtures, registered by being here)
    BUILDS,
    build_for,
    jobset_controller,
    jobset_crds,
    kubeflow_controller,
    kuberay_controller,
    lws_controller,
    mpi_operator,
    training_operator,
)
from phalanx.cluster import ClusterDescription, LocalCluster, load_description
from phalanx.cluster.binaries import BinariesMissing, require_all

REPO = Path(__file__).resolve().parents[1]
SMALL_CLUSTER = REPO / "examples" / "clusters" / "small.yaml"
# Every property and fuzz test tries the same examples every run, so a failure is one anyone
# can rerun: derandomized, no example database. No deadline and no too_slow health check,
# since both time the test and the machine's load decides that. A module's own
# `@settings(max_examples=...)` starts from this profile (loaded before any test module).
settings.register_profile(
    "deterministic",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("deterministic")

CLUSTER_FIXTURES = {
    "cluster", "namespace", "kubectl", "api_client", "api_client_factory", "kube_scheduler",
    "workload_api_cluster", "workload_api_kube_scheduler", *BUILDS,
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses the real cluster is an e2e test, marked or not."""
    for item in items:
        if CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.e2e)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the workload controllers the selected tests use before the first test runs."""
    if session.config.option.collectonly:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    needed = {name for item in session.items for name in BUILDS
              if name in getattr(item, "fixturenames", ())}
    if needed and reporter is not None:
        reporter.write_line(f"building the controllers of {', '.join(sorted(needed))} "
                            "(hack/controllers.sh; minutes the first time, cached after)")
    build_for(session.items)


@pytest.fixture(scope="session")
def small_cluster() -> ClusterDescription:
    return load_description(SMALL_CLUSTER)


def running_cluster(
    run_dir: Path, description: ClusterDescription, workload_api: bool = False
) -> Iterator[LocalCluster]:
    """A prepared cluster for the length of a fixture; fails (never skips) without binaries."""
    try:
        require_all()
    except BinariesMissing as error:
        pytest.fail(f"{error}\nThe end-to-end tests need them: run `make tools` first.")
    local = LocalCluster(run_dir, die_with_parent=True, workload_api=workload_api)
    local.start()
    try:
        local.prepare(description)
        yield local
    finally:
        local.stop()
    leftovers = local.pids()
    if leftovers:
        pytest.fail(f"cluster processes still alive after stop: {leftovers}")


@pytest.fixture(scope="session")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, small_cluster: ClusterDescription
) -> Iterator[LocalCluster]:
    yield from running_cluster(tmp_path_factory.mktemp("cluster"), small_cluster)


@pytest.fixture(scope="session")
def workload_api_cluster(
    tmp_path_factory: pytest.TempPathFactory, small_cluster: ClusterDescription
) -> Iterator[LocalCluster]:
    yield from running_cluster(
        tmp_path_factory.mktemp("workload-api-cluster"), small_cluster, workload_api=True
    )


@pytest.fixture
def kube_scheduler(cluster: LocalCluster) -> Iterator[int]:
    """kube-scheduler's pid; it runs for this test only, so tests that expect a
    default-scheduler pod to stay Pending are not disturbed."""
    yield cluster.start_scheduler()
    cluster.stop_scheduler()


@pytest.fixture
def workload_api_kube_scheduler(workload_api_cluster: LocalCluster) -> Iterator[int]:
    yield workload_api_cluster.start_scheduler()
    workload_api_cluster.stop_scheduler()


@pytest.fixture
def kubectl(cluster: LocalCluster) -> Callable[..., Any]:
    return cluster.kubectl


@pytest.fixture
def namespace(cluster: LocalCluster) -> Iterator[str]:
    name = f"t-{secrets.token_hex(4)}"
    cluster.kubectl("create", "namespace", name)
    yield name
    with contextlib.suppress(Exception):
        # The namespace first (Terminating: no controller creates anything in it any more),
        # then its pods at once, without grace: the next test finds their GPUs free right
        # away, not when the namespace controller gets to them.
        cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)
        cluster.kubectl(
            "delete", "pods,podgroups.scheduling.phalanx.io", "--all", "-n", name,
            "--grace-period=0", "--force", "--wait=false", check=False,
        )


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
