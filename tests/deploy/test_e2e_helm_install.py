"""`helm install phalanx charts/phalanx` into a fresh local cluster (the real helm binary, the
real kube-apiserver and kube-controller-manager), then the operator, run with what the chart
installed, places the demo's rack gang whole, its objects admitted by the chart's webhooks.

What is real: helm (hack/helm.sh) installing the chart's CRDs and objects; the API server
admitting them (RBAC, the namespace's "restricted" Pod Security Standard on the Deployment's
pods, which the ReplicaSet controller creates); the operator process (`phalanx operator`,
the command the Deployment runs) authenticating with a TokenRequest token of the chart's
ServiceAccount, so only the chart's ClusterRole and Role authorize it, with the container's
environment, one of the Deployment's own pod names as its identity, and the chart's
ConfigMap and the Secret phalanx-webhook-tls as files, laid out as the pod's volume mounts
would give them; kube-apiserver calling its webhooks through the chart's two
configurations (rules, failure policies, namespace selectors, caBundle as installed).

What stands in for the kubelet and the pod network: kwok has no kubelet and no container
runtime, so the Deployment's pods never start (no kube-scheduler runs here either: they stay
Pending); the process above runs in their place on this machine, with the test loop's
shorter cycle timings (operator_process.FAST). With no pod network or kube-proxy, nothing
here reaches the Service phalanx-webhook, so the test points each webhook's clientConfig
at the process on loopback instead (and puts the Service back after). cert-manager is not
installed: the chart runs with webhook.certificate=secret, the Secret made by the test."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phalanx.cluster import ClusterDescription, LocalCluster
from phalanx.cluster.binaries import BinariesMissing, require_all
from phalanx.cluster.labels import TOPOLOGY_LEAF
from phalanx.cluster.ports import free_ports
from phalanx.webhooks.certificate import self_signed
from phalanx.webhooks.names import MUTATING_CONFIGURATION, TLS_SECRET, VALIDATING_CONFIGURATION
from polling import eventually, get_json

from .helm import CHART, CONFIG_MAP, RELEASE, helm
from .operator_process import PATIENCE, OperatorProcess, account_kubeconfig

pytestmark = pytest.mark.e2e

NAMESPACE = "phalanx-system"
DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
GANG = "finetune"  # 4 pods x 8 GPUs, required: rack (examples/demo/20-finetune-rack.yaml)
POD_SELECTOR = "app.kubernetes.io/name=phalanx,app.kubernetes.io/component=operator"
CONFIGURATIONS = (f"mutatingwebhookconfiguration/{MUTATING_CONFIGURATION}",
                  f"validatingwebhookconfiguration/{VALIDATING_CONFIGURATION}")


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
    """The chart installed with its default values but the webhook's certificate (a provided
    Secret, its CA given as caBundle), the Secret, then the example cluster's GPU nodes and
    NetworkTopology (which needs the CRDs the chart brought)."""
    cluster = bare_cluster
    cert, key = self_signed([f"phalanx-webhook.{NAMESPACE}.svc", "127.0.0.1"])
    helm("install", RELEASE, str(CHART), "--set", "webhook.certificate=secret",
         "--set", f"webhook.caBundle={b64(cert)}", kubeconfig=cluster.kubeconfig)
    cluster.apply([{
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": TLS_SECRET, "namespace": NAMESPACE},
        "data": {"tls.crt": b64(cert), "tls.key": b64(key), "ca.crt": b64(cert)},
    }])
    nodes = cluster.add_nodes(small_cluster, topology_name="default")
    cluster.wait_nodes_ready(len(nodes))
    return cluster


@pytest.fixture
def operator_as_chart_pod(installed: LocalCluster, tmp_path: Path) -> Iterator[OperatorProcess]:
    """`phalanx operator` as one of the Deployment's pods would run it: the ServiceAccount's
    token, its volumes as files, the container's PHALANX_* environment; its webhooks served
    on loopback, where the two configurations now call them."""
    cluster = installed
    pod = deployment_pods(cluster)[0]
    (container,) = pod["spec"]["containers"]
    assert container["args"] == ["operator"]  # what OperatorProcess runs
    mounts = mount_volumes(cluster, pod, tmp_path / "volumes")
    (port,) = free_ports(1)
    env = {**pod_env(pod, mounts),
           "PHALANX_WEBHOOK__HOST": "127.0.0.1", "PHALANX_WEBHOOK__PORT": str(port)}
    kubeconfig = account_kubeconfig(cluster, tmp_path / "kubeconfig", "phalanx", NAMESPACE)
    installed_clients = point_webhooks_at(cluster, f"https://127.0.0.1:{port}")
    process = OperatorProcess("operator", kubeconfig, tmp_path, env=env).start()
    yield process
    process.ensure_dead()
    put_back(cluster, installed_clients)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def mount_volumes(cluster: LocalCluster, pod: dict[str, Any], root: Path) -> dict[str, Path]:
    """The pod's ConfigMap and Secret volumes written out as the kubelet mounts them: each
    key a file; mount path -> local folder."""
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    mounts: dict[str, Path] = {}
    for mount in pod["spec"]["containers"][0]["volumeMounts"]:
        volume = volumes[mount["name"]]
        if "configMap" in volume:
            found = get_json(cluster, "configmap", volume["configMap"]["name"], "-n", NAMESPACE)
            files = {k: v.encode() for k, v in found["data"].items()}
        elif "secret" in volume:
            found = get_json(cluster, "secret", volume["secret"]["secretName"], "-n", NAMESPACE)
            files = {k: base64.b64decode(v) for k, v in found["data"].items()}
        else:
            continue  # the /tmp emptyDir: the process has this machine's
        folder = root / mount["name"]
        folder.mkdir(parents=True)
        for name, data in files.items():
            (folder / name).write_bytes(data)
        mounts[mount["mountPath"]] = folder
    return mounts


def point_webhooks_at(cluster: LocalCluster, base: str) -> dict[str, list[dict[str, Any]]]:
    """Each webhook's clientConfig: the chart's Service -> `base` + its path, same caBundle
    (the stand-in for the pod network). Returns the clientConfigs as installed."""
    installed: dict[str, list[dict[str, Any]]] = {}
    for configuration in CONFIGURATIONS:
        webhooks = get_json(cluster, configuration)["webhooks"]
        installed[configuration] = [w["clientConfig"] for w in webhooks]
        patch = [{"op": "replace", "path": f"/webhooks/{i}/clientConfig",
                  "value": {"url": base + w["clientConfig"]["service"]["path"],
                            "caBundle": w["clientConfig"]["caBundle"]}}
                 for i, w in enumerate(webhooks)]
        cluster.kubectl("patch", configuration, "--type=json", "-p", json.dumps(patch))
    return installed


def put_back(cluster: LocalCluster, clients: dict[str, list[dict[str, Any]]]) -> None:
    for configuration, configs in clients.items():
        patch = [{"op": "replace", "path": f"/webhooks/{i}/clientConfig", "value": config}
                 for i, config in enumerate(configs)]
        cluster.kubectl("patch", configuration, "--type=json", "-p", json.dumps(patch))


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


def pod_env(pod: dict[str, Any], mounts: dict[str, Path]) -> dict[str, str]:
    """The container's PHALANX_* variables, with what the pod's downward API would give and
    paths into its volumes turned into the local folders holding them."""
    known = {"$(POD_NAME)": pod["metadata"]["name"], "$(POD_NAMESPACE)": NAMESPACE}
    (container,) = pod["spec"]["containers"]
    env = {e["name"]: known.get(e.get("value", ""), e.get("value", ""))
           for e in container["env"] if e["name"].startswith("PHALANX_")}
    for name, value in env.items():
        for path, folder in mounts.items():
            if value == path or value.startswith(path + "/"):
                env[name] = str(folder) + value[len(path):]
    return env


def test_without_cert_manager_the_default_install_is_refused_saying_what_to_do(
    bare_cluster: LocalCluster,
) -> None:
    """The default values take the webhook's certificate from cert-manager; a cluster that
    does not serve its API gets a message naming the ways out, and no release (helm list
    shows releases in every state)."""
    result = helm("install", RELEASE, str(CHART), kubeconfig=bare_cluster.kubeconfig,
                  check=False)
    assert result.returncode != 0
    assert "this cluster does not serve cert-manager.io/v1" in result.stderr, result.stderr
    assert "--set webhook.certificate=secret" in result.stderr
    listed = helm("list", "--all-namespaces", "-o", "json", kubeconfig=bare_cluster.kubeconfig)
    assert json.loads(listed.stdout) == []


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
    assert ca_bundles(cluster) == {get_json(cluster, "secret", TLS_SECRET, "-n", NAMESPACE)[
        "data"]["ca.crt"]}


def ca_bundles(cluster: LocalCluster) -> set[str]:
    return {w["clientConfig"].get("caBundle", "") for c in CONFIGURATIONS
            for w in get_json(cluster, c)["webhooks"]}


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

    # The chart's webhooks, served by the process: a PodGroup naming no Queue is refused
    # (validating, failurePolicy Fail) and a pod written for kube-scheduler that carries
    # the queue label is sent to Phalanx (mutating).
    refused = cluster.apply([{
        "apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": "typo"}, "spec": {"minMember": 1, "queue": "no-such-queue"},
    }], namespace="demo", check=False)
    assert "spec.queue: queue no-such-queue does not exist" in refused.stderr, refused.stderr
    cluster.apply([{
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "sent", "labels": {"scheduling.phalanx.io/queue": "team-a"}},
        "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
    }], namespace="demo")
    sent = get_json(cluster, "pod", "sent", "-n", "demo")
    assert sent["spec"]["schedulerName"] == "phalanx"
    assert operator.stop() == 0


def test_helm_upgrade_with_new_settings_rolls_the_deployment(installed: LocalCluster) -> None:
    """A settings value changes the ConfigMap and, by the checksum annotation, the pod
    template: the Deployment controller makes a new ReplicaSet (kustomize gets the same with
    its hash-suffixed ConfigMap name). No caBundle given this time: the chart reads it from
    the Secret phalanx-webhook-tls in the cluster."""
    cluster = installed

    def templates() -> set[str]:
        items = get_json(cluster, "replicasets", "-n", NAMESPACE, "-l", POD_SELECTOR)["items"]
        return {r["metadata"]["labels"]["pod-template-hash"] for r in items}

    before = templates()
    assert len(before) == 1
    helm("upgrade", RELEASE, str(CHART), "--set", "config.mode=gate",
         "--set", "webhook.certificate=secret", kubeconfig=cluster.kubeconfig)
    secret = get_json(cluster, "secret", TLS_SECRET, "-n", NAMESPACE)
    assert ca_bundles(cluster) == {secret["data"]["ca.crt"]}
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
