"""`helm install phalanx charts/phalanx` into a fresh local cluster (the real helm binary, the
real kube-apiserver and kube-controller-manager), then the operator, run with what the chart
installed, places the demo's rack gang whole.

What is real: helm (hack/helm.sh) installing the chart's CRDs and objects; the API server
admitting them (RBAC, the namespace's "restricted" Pod Security Standard on the Deployment's
pods, which the ReplicaSet controller creates); the operator process (`phalanx operator`,
the command the Deployment runs) authenticating with a TokenRequest token of the chart's
ServiceAccount, so only the chart's ClusterRole and Role authorize it, reading the chart's
ConfigMap as its settings file and the Deployment's environment, with one of the
Deployment's own pod names as its identity. What stands in for the kubelet: kwok has no
kubelet and no container runtime, so the Deployment's pods are never started (no
kube-scheduler runs here either: they stay Pending); the process above runs in their place
on this machine, with the test loop's shorter cycle timings (operator_process.FAST)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phalanx.cluster import ClusterDescription, LocalCluster
from phalanx.cluster.binaries import BinariesMissing, require_all
from phalanx.cluster.labels import TOPOLOGY_LEAF
from polling import eventually, get_json

from .helm import CHART, CONFIG_MAP, RELEASE, helm
from .operator_process import PATIENCE, OperatorProcess, account_kubeconfig

pytestmark = pytest.mark.e2e

NAMESPACE = "phalanx-system"
DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
GANG = "finetune"  # 4 pods x 8 GPUs, required: rack (examples/demo/20-finetune-rack.yaml)
POD_SELECTOR = "app.kubernetes.io/name=phalanx,app.kubernetes.io/component=operator"


@pytest.fixture(scope="module")
def bare_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A control plane of its own with nothing of Phalanx in it (the session `cluster` has
    the CRDs applied already, and other tests' namespace and roles, which Helm would refuse
    to take over): Helm installs everything here."""
    try:
        require_all()
    except BinariesMissing as error:
        pytest.fail(f"{error}\nThe end-to-end tests need them: run `make tools` first.")
    local = LocalCluster(tmp_path_factory.mktemp("helm-cluster"), die_with_parent=True)
    local.start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture(scope="module")
def installed(bare_cluster: LocalCluster, small_cluster: ClusterDescription) -> LocalCluster:
    """The chart installed with its default values, then the example cluster's GPU nodes and
    NetworkTopology (which needs the CRDs the chart brought)."""
    cluster = bare_cluster
    helm("install", RELEASE, str(CHART), kubeconfig=cluster.kubeconfig)
    nodes = cluster.add_nodes(small_cluster, topology_name="default")
    cluster.wait_nodes_ready(len(nodes))
    return cluster


@pytest.fixture
def operator_as_chart_pod(installed: LocalCluster, tmp_path: Path) -> Iterator[OperatorProcess]:
    """`phalanx operator` as one of the Deployment's pods would run it: the ServiceAccount's
    token, the ConfigMap's settings file, the container's PHALANX_* environment."""
    cluster = installed
    pod = deployment_pods(cluster)[0]
    config = get_json(cluster, "configmap", CONFIG_MAP, "-n", NAMESPACE)["data"]["config.yaml"]
    (tmp_path / "config.yaml").write_text(config)
    env = pod_env(pod, tmp_path / "config.yaml")
    kubeconfig = account_kubeconfig(cluster, tmp_path / "kubeconfig", "phalanx", NAMESPACE)
    assert pod["spec"]["containers"][0]["args"] == ["operator"]  # what OperatorProcess runs
    process = OperatorProcess("operator", kubeconfig, tmp_path, env=env).start()
    yield process
    process.ensure_dead()


def deployment_pods(cluster: LocalCluster) -> list[dict[str, Any]]:
    """The Deployment's pods, once the ReplicaSet controller made them all (the API server
    admits them only if they meet the namespace's Pod Security Standard)."""
    replicas = get_json(cluster, "deployment", "phalanx", "-n", NAMESPACE)["spec"]["replicas"]

    def made() -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = get_json(cluster, "pods", "-n", NAMESPACE,
                                               "-l", POD_SELECTOR)["items"]
        return items if len(items) == replicas else []

    pods: list[dict[str, Any]] = eventually(made, PATIENCE)
    assert pods, replica_set_events(cluster)
    return pods


def replica_set_events(cluster: LocalCluster) -> str:
    return cluster.kubectl("get", "events", "-n", NAMESPACE, check=False).stdout


def pod_env(pod: dict[str, Any], config: Path) -> dict[str, str]:
    """The container's PHALANX_* variables, with what the pod's downward API would give."""
    known = {"$(POD_NAME)": pod["metadata"]["name"], "$(POD_NAMESPACE)": NAMESPACE}
    (container,) = pod["spec"]["containers"]
    env = {e["name"]: known.get(e.get("value", ""), e.get("value", ""))
           for e in container["env"] if e["name"].startswith("PHALANX_")}
    assert env.pop("PHALANX_CONFIG") == f"/etc/phalanx/{config.name}"
    return {**env, "PHALANX_CONFIG": str(config)}


def test_helm_installs_the_chart_as_a_release_with_its_crds(installed: LocalCluster) -> None:
    cluster = installed
    status = json.loads(helm("status", RELEASE, "-o", "json", kubeconfig=cluster.kubeconfig).stdout)
    assert status["info"]["status"] == "deployed"
    crds = cluster.kubectl("get", "crd", "-o", "name").stdout.split()
    assert sorted(crds) == [f"customresourcedefinition.apiextensions.k8s.io/{name}.scheduling"
                            f".phalanx.io" for name in ("networktopologies", "podgroups", "queues")]
    labels = get_json(cluster, "namespace", NAMESPACE)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    # The ReplicaSet controller made both pods: the restricted namespace admitted them.
    pods = deployment_pods(cluster)
    assert {p["spec"]["serviceAccountName"] for p in pods} == {"phalanx"}
    assert all(not p["spec"].get("nodeName") for p in pods)  # no kubelet, no kube-scheduler


def test_the_operator_run_with_what_the_chart_installed_places_the_demo_gang(
    installed: LocalCluster, operator_as_chart_pod: OperatorProcess
) -> None:
    cluster, operator = installed, operator_as_chart_pod
    # It leads through the chart's Role (the Lease its settings name, in its namespace), as
    # the Deployment's first pod (its identity: the pod's name, from the container's env).
    operator.wait_for(lambda: operator.get("/readyz") == (200, "caches synced\n"), "leading")
    lease = get_json(cluster, "lease", "phalanx-leader", "-n", NAMESPACE)
    assert lease["spec"]["holderIdentity"] == deployment_pods(cluster)[0]["metadata"]["name"]
    # It creates the default Queue at startup (the ClusterRole's `create queues`).
    operator.wait_for(lambda: cluster.kubectl("get", "queues.scheduling.phalanx.io",
                                              "default", check=False).returncode == 0,
                      "default Queue")

    cluster.kubectl("create", "namespace", "demo")
    cluster.apply(DEMO / "00-queue.yaml")
    cluster.apply(DEMO / "20-finetune-rack.yaml", namespace="demo")

    def phase() -> str:
        group = get_json(cluster, "podgroups.scheduling.phalanx.io", GANG, "-n", "demo")
        return str((group.get("status") or {}).get("phase", ""))

    operator.wait_for(lambda: phase() == "Running", f"gang {GANG} Running")
    pods = get_json(cluster, "pods", "-n", "demo", "-l",
                    f"scheduling.phalanx.io/pod-group={GANG}")["items"]
    nodes = [p["spec"].get("nodeName") for p in pods]
    assert len(nodes) == 4 and all(nodes), nodes  # whole: every pod of the gang bound
    racks = {get_json(cluster, "node", n)["metadata"]["labels"][TOPOLOGY_LEAF] for n in nodes}
    assert len(racks) == 1, racks  # inside one rack, as the gang requires
    assert operator.sample("phalanx_bindings_total") == 4
    assert operator.stop() == 0


def test_helm_upgrade_with_new_settings_rolls_the_deployment(installed: LocalCluster) -> None:
    """A settings value changes the ConfigMap and, by the checksum annotation, the pod
    template: the Deployment controller makes a new ReplicaSet (kustomize gets the same with
    its hash-suffixed ConfigMap name)."""
    cluster = installed

    def templates() -> set[str]:
        items = get_json(cluster, "replicasets", "-n", NAMESPACE, "-l", POD_SELECTOR)["items"]
        return {r["metadata"]["labels"]["pod-template-hash"] for r in items}

    before = templates()
    assert len(before) == 1
    helm("upgrade", RELEASE, str(CHART), "--set", "config.mode=gate",
         kubeconfig=cluster.kubeconfig)
    config = get_json(cluster, "configmap", CONFIG_MAP, "-n", NAMESPACE)["data"]["config.yaml"]
    assert "mode: gate" in config.splitlines()
    assert eventually(lambda: len(templates()) == 2, PATIENCE), templates()


def test_helm_uninstall_removes_the_release_and_keeps_the_crds(installed: LocalCluster) -> None:
    """Helm leaves crds/ installed (deleting them would delete every PodGroup and Queue);
    docs/install.md says how to remove them."""
    cluster = installed
    helm("uninstall", RELEASE, "--wait", kubeconfig=cluster.kubeconfig, timeout=PATIENCE)
    assert cluster.kubectl("get", "clusterrole", "phalanx", check=False).returncode != 0
    assert cluster.kubectl("get", "deployment", "phalanx", "-n", NAMESPACE,
                           check=False).returncode != 0
    assert len(cluster.kubectl("get", "crd", "-o", "name").stdout.split()) == 3
