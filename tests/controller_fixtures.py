"""Session fixtures that run the real workload controllers on the session `cluster`.

- `jobset_controller`: JobSet (sigs.k8s.io/jobset) with its CRDs and webhooks.
- `lws_controller`: LeaderWorkerSet (sigs.k8s.io/lws) with its CRDs and webhooks.
- `training_operator`: Kubeflow training-operator v1 (github.com/kubeflow/training-operator:
  PyTorchJob, TFJob, ...) with its CRDs and webhooks.
- `jobset_crds`: the folder of JobSet's CRDs (built, not installed, no controller run).
- `kuberay_controller`: KubeRay's ray-operator (github.com/ray-project/kuberay/ray-operator:
  RayCluster, RayJob) with its CRDs.
- `mpi_operator`: Kubeflow mpi-operator v2 (github.com/kubeflow/mpi-operator: MPIJob) with its
  CRD.
- `kubeflow_controller`: Kubeflow Trainer v2 (github.com/kubeflow/trainer/v2: TrainJob runs as
  a JobSet, so JobSet runs too) with its CRDs, webhooks and the `torch-distributed`
  ClusterTrainingRuntime of its release.

Each yields a `phalanx.cluster.workload_controllers.Running`, started by
`workload_controllers.start` as `make run` starts them. Pods the workloads create have
the scheduler name their template gives (default-scheduler unless set): ask for
`kube_scheduler` too, or set `schedulerName: phalanx` and run the operator.

Building a controller takes minutes the first time (then it is cached under
~/.cache/phalanx/controllers). So that the build does not count against one test's timeout,
`build_for(items)` builds, once, before the first test, what the selected tests will use.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from phalanx.cluster import LocalCluster, workload_controllers
from phalanx.cluster.workload_controllers import Running

BUILDS = {
    "jobset_controller": ("jobset",),
    "lws_controller": ("lws",),
    "kubeflow_controller": ("jobset", "trainer"),
    "jobset_crds": ("jobset",),
    "training_operator": ("training-operator",),
    "kuberay_controller": ("kuberay",),
    "mpi_operator": ("mpi-operator",),
}


def build_for(items: Iterable[pytest.Item]) -> list[str]:
    """Build the controllers the given tests use; returns their names."""
    wanted: list[str] = []
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            wanted += [name for name in BUILDS.get(fixture, ()) if name not in wanted]
    for name in wanted:
        workload_controllers.build(name)
    return wanted


def running_controller(cluster: LocalCluster, name: str) -> Iterator[Running]:
    running = workload_controllers.start(cluster, name)
    yield running
    workload_controllers.stop(cluster, running)


@pytest.fixture(scope="session")
def jobset_controller(cluster: LocalCluster) -> Iterator[Running]:
    yield from running_controller(cluster, "jobset")


@pytest.fixture(scope="session")
def lws_controller(cluster: LocalCluster) -> Iterator[Running]:
    yield from running_controller(cluster, "lws")


@pytest.fixture(scope="session")
def kubeflow_controller(cluster: LocalCluster, jobset_controller: Running) -> Iterator[Running]:
    yield from running_controller(cluster, "trainer")  # with its release's runtimes


@pytest.fixture(scope="session")
def jobset_crds() -> Path:
    return workload_controllers.manifests("jobset") / "crds"


@pytest.fixture(scope="session")
def training_operator(cluster: LocalCluster) -> Iterator[Running]:
    yield from running_controller(cluster, "training-operator")


@pytest.fixture(scope="session")
def kuberay_controller(cluster: LocalCluster) -> Iterator[Running]:
    yield from running_controller(cluster, "kuberay")


@pytest.fixture(scope="session")
def mpi_operator(cluster: LocalCluster) -> Iterator[Running]:
    yield from running_controller(cluster, "mpi-operator")
