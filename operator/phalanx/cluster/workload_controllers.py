"""The real workload controllers (JobSet, LeaderWorkerSet, Kubeflow Trainer and training-operator,
KubeRay, mpi-operator) on a local cluster.

`hack/controllers.sh NAME` builds a controller manager from its Go module (pinned), links it
into `.local/bin` and copies its CRDs and webhook configurations from the module's own
manifests into `.local/controllers/NAME`. `start` runs it against a `LocalCluster` the way
its release manifests deploy it, with what a laptop lacks replaced on loopback:

- its CRDs applied and Established;
- its webhooks served on 127.0.0.1 (a free port, a certificate from a CA made for it) and
  registered with kube-apiserver by URL instead of by Service; the release's own patches
  (pod webhooks limited to the controller's pods) applied; the registrations are removed
  before the controller stops, since their failure policy is Fail;
- its built-in certificate rotation and leader election off; metrics and health probes on
  free loopback ports; talking to kube-apiserver as the admin (mpi-operator cannot turn
  leader election off: it takes its Lease, a stale one deleted first, and its health
  port is compiled in, so it counts as ready once it logs that its workers started);
- what its release installs besides (Trainer's `torch-distributed` ClusterTrainingRuntime)
  applied once it serves its webhooks.

`make run` (`phalanx.demo`) and the end-to-end fixtures both start them with `start`, so
the tests run the controllers the way the demo cluster has them.

The process is recorded in the cluster's run directory, so `LocalCluster.stop` ends it too.
"""

from __future__ import annotations

import base64
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from phalanx.cluster import pki, processes
from phalanx.cluster.description import repository_root
from phalanx.cluster.local import ClusterError, LocalCluster
from phalanx.cluster.ports import free_ports

ROOT = repository_root(Path(__file__).resolve().parent)
BUILD_SCRIPT = ROOT / "hack" / "controllers.sh"
CERT_SUBDIR = Path("k8s-webhook-server") / "serving-certs"  # controller-runtime's default


@dataclass(frozen=True)
class Rotator:
    """A certificate rotator that cannot be turned off (Kubeflow training-operator v1's,
    open-policy-agent/cert-controller): it needs its Secret to exist, and reports ready
    only once a file exists at `cert_dir`/tls.crt, a path compiled in. It injects its CA
    only into a webhook configuration of its own name, which is never created here, so
    the webhooks keep the loopback certificate they are registered with."""

    namespace: str  # its MY_POD_NAMESPACE
    secret: str
    cert_dir: Path


@dataclass(frozen=True)
class Kind:
    """What differs between the controllers: their configuration file's API and shape
    (`config_api` empty: configured by flags only, as training-operator v1 is)."""

    name: str  # as hack/controllers.sh names it
    config_api: str
    cert_management: str  # the configuration key of its own certificate rotation
    requires: tuple[str, ...] = ()  # controllers whose CRDs it watches
    flags: tuple[str, ...] = ()
    webhook_cert_dir: bool = True  # whether its configuration names the certificate folder
    status_server: bool = False
    rotator: Rotator | None = None
    # Without a configuration file: its flags for the ports and files (`port_flags`
    # formatted with webhook, metrics, health and kubeconfig).
    port_flags: tuple[str, ...] = (
        "--webhook-server-port={webhook}",
        "--metrics-bind-address=127.0.0.1:{metrics}",
        "--health-probe-bind-address=127.0.0.1:{health}",
    )
    ready_line: str = ""  # ready once its log has this line (else: /readyz on `health`)
    lease: str = ""  # "namespace/name" of the Lease it always takes (deleted first)
    fixed_port: int = 0  # a port it always listens on, on every address (no flag moves it)


# `make run` starts these, in order
ALL = ("jobset", "lws", "trainer", "training-operator", "kuberay", "mpi-operator")

KINDS = {
    "jobset": Kind("jobset", "config.jobset.x-k8s.io/v1alpha1", "internalCertManagement"),
    # lws's --leader-elect flag defaults to true and overrides the file.
    "lws": Kind(
        "lws", "config.lws.x-k8s.io/v1alpha1", "internalCertManagement",
        flags=("--leader-elect=false",),
    ),
    # Trainer v2 runs TrainJobs as JobSets; its webhook certificates are read from
    # controller-runtime's default folder under $TMPDIR.
    "trainer": Kind(
        "trainer", "config.trainer.kubeflow.org/v1alpha1", "certManagement",
        requires=("jobset",), webhook_cert_dir=False, status_server=True,
    ),
    # Kubeflow training-operator v1 (PyTorchJob, TFJob, ...): flags only; its webhook
    # server reads controller-runtime's default folder under $TMPDIR. Every job kind but
    # its MPIJob v1, whose CRD name mpi-operator's v2beta1 takes (hack/controllers.sh
    # leaves that CRD out), as Kubeflow runs the two side by side.
    "training-operator": Kind(
        "training-operator", "", "", webhook_cert_dir=False,
        flags=tuple(f"--enable-scheme={kind}"
                    for kind in ("pytorchjob", "tfjob", "mxjob", "xgboostjob", "paddlejob")),
        rotator=Rotator("kubeflow", "training-operator-webhook-cert",
                        Path("/tmp/k8s-webhook-server/serving-certs")),
    ),
    # KubeRay's ray-operator (RayCluster, RayJob, RayService): flags only; its release
    # (config/default) runs no webhook.
    "kuberay": Kind(
        "kuberay", "", "", webhook_cert_dir=False,
        port_flags=("--metrics-addr=127.0.0.1:{metrics}",
                    "--health-probe-bind-address=127.0.0.1:{health}"),
        flags=("--enable-leader-election=false",),
    ),
    # Kubeflow mpi-operator v2 (MPIJob v2beta1): flags only, no webhook, no readiness
    # endpoint (/healthz on its compiled-in port 8080 says nothing of its caches), and
    # leader election it cannot turn off (its Lease in --lock-namespace).
    "mpi-operator": Kind(
        "mpi-operator", "", "", webhook_cert_dir=False,
        port_flags=("--kubeConfig={kubeconfig}",),
        flags=("--lock-namespace=kube-system", "--kube-api-qps=100", "--kube-api-burst=200"),
        ready_line="Started workers", lease="kube-system/mpi-operator", fixed_port=8080,
    ),
}


@dataclass(frozen=True)
class Running:
    """A started controller: its name, process and the webhook registrations it serves."""

    name: str
    pid: int
    webhooks: tuple[str, ...]  # "mutatingwebhookconfiguration/NAME", ...
    metrics_port: int
    log: Path


def build(name: str) -> Path:
    """Build (or, when cached, only link) the controller; returns its manifest folder."""
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT), name], capture_output=True, text=True, timeout=3600
    )
    if result.returncode != 0:
        raise ClusterError(f"hack/controllers.sh {name} failed:\n{result.stdout}{result.stderr}")
    return manifests(name)


def manifests(name: str) -> Path:
    """Where hack/controllers.sh put the controller's manifests: crds/, webhooks/, extra/."""
    return ROOT / ".local" / "controllers" / name


def start(cluster: LocalCluster, name: str, timeout: float = 120.0) -> Running:
    """Build if needed, install CRDs and webhooks, run the controller until it is ready."""
    kind = KINDS[name]
    manifests = build(name)
    cluster.install_crds(manifests / "crds")
    work = cluster.run_dir / "controllers" / name
    certs = pki.write_loopback_serving(work / "tmp" / CERT_SUBDIR, name)
    webhook_port, metrics_port, health_port, status_port = free_ports(4)
    env = {"KUBECONFIG": str(cluster.internal_kubeconfig), "TMPDIR": str(work / "tmp")}
    if kind.config_api:
        config = work / "config.yaml"
        config.write_text(yaml.safe_dump(configuration(
            kind, webhook_port, metrics_port, health_port, status_port, certs.cert.parent
        ), sort_keys=False))
        arguments = [f"--config={config}"]
    else:
        arguments = [flag.format(webhook=webhook_port, metrics=metrics_port, health=health_port,
                                 kubeconfig=cluster.internal_kubeconfig)
                     for flag in kind.port_flags]
    if kind.rotator is not None:
        env["MY_POD_NAMESPACE"] = kind.rotator.namespace
        _prepare_rotator(cluster, kind.rotator, certs.cert)
    if kind.fixed_port:
        _require_free(name, kind.fixed_port)
    if kind.lease:
        namespace, lease = kind.lease.split("/")
        cluster.kubectl("delete", "lease", lease, "-n", namespace, "--ignore-not-found")
    started = cluster.spawn(
        name, [str(ROOT / ".local" / "bin" / name), *arguments, *kind.flags], env=env,
    )
    try:
        _wait_ready(started, health_port, timeout, kind.ready_line)
        registrations = webhook_configurations(
            _load_all(manifests / "webhooks"), name,
            f"https://127.0.0.1:{webhook_port}", certs.ca_cert.read_bytes(),
        )
        if registrations:  # KubeRay's and mpi-operator's releases register none
            cluster.apply(registrations)
        if any((manifests / "extra").glob("*.yaml")):
            cluster.apply(manifests / "extra")
    except BaseException:
        processes.stop_one(cluster.run_dir, name)
        raise
    return Running(
        name=name,
        pid=started.pid,
        webhooks=tuple(f"{r['kind'].lower()}/{r['metadata']['name']}" for r in registrations),
        metrics_port=metrics_port,
        log=started.log,
    )


def start_missing(cluster: LocalCluster, names: Iterable[str] = ALL) -> list[Running]:
    """Start those of `names` not running on the cluster yet (a cluster that `make run`
    left running keeps its controllers); returns the ones started here, in order."""
    running = cluster.pids()
    return [start(cluster, name) for name in names if name not in running]


def _prepare_rotator(cluster: LocalCluster, rotator: Rotator, cert: Path) -> None:
    """Its namespace and (empty) Secret, and a file where it looks for one: it only checks
    that the file exists (the webhook server reads ours from $TMPDIR); an existing one,
    another run's, is left alone."""
    cluster.apply([
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": rotator.namespace}},
        {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
         "metadata": {"name": rotator.secret, "namespace": rotator.namespace}},
    ])
    rotator.cert_dir.mkdir(parents=True, exist_ok=True)
    target = rotator.cert_dir / "tls.crt"
    if not target.exists():
        shutil.copyfile(cert, target)


def stop(cluster: LocalCluster, running: Running) -> None:
    """Unregister its webhooks (so the API server stops calling them), then stop it."""
    if running.webhooks:
        cluster.kubectl("delete", "--ignore-not-found", *running.webhooks)
    processes.stop_one(cluster.run_dir, running.name)


def configuration(
    kind: Kind,
    webhook_port: int,
    metrics_port: int,
    health_port: int,
    status_port: int,
    cert_dir: Path,
) -> dict[str, Any]:
    """The controller's Configuration file: loopback everything, no leader election, no
    certificate rotation of its own (we hand it a certificate)."""
    webhook: dict[str, Any] = {"host": "127.0.0.1", "port": webhook_port}
    if kind.webhook_cert_dir:
        webhook["certDir"] = str(cert_dir)
    config: dict[str, Any] = {
        "apiVersion": kind.config_api,
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        kind.cert_management: {"enable": False},
        "webhook": webhook,
        "metrics": {"bindAddress": f"127.0.0.1:{metrics_port}"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "clientConnection": {"qps": 100, "burst": 200},
    }
    if kind.status_server:
        config["statusServer"] = {"port": status_port}
    return config


def webhook_configurations(
    documents: Iterable[Any], name: str, url: str, ca_bundle: bytes
) -> list[dict[str, Any]]:
    """The release's webhook registrations, pointed at `url` on loopback.

    `documents` are the module's generated manifests and its kustomize patches (JSON patch
    lists whose `replace` values are whole webhook entries: they win over the generated
    entry of the same name and path). Registrations are renamed `<name>-<original>`, as the
    release's kustomize name prefix does, so two controllers' do not collide.
    """
    documents = list(documents)
    replacements = {
        (value["name"], value["clientConfig"]["service"]["path"]): value
        for document in documents if isinstance(document, list)
        for operation in document if operation.get("op") == "replace"
        for value in [operation["value"]]
        if isinstance(value, Mapping) and "clientConfig" in value  # a whole webhook entry
    }
    bundle = base64.b64encode(ca_bundle).decode()
    registrations = []
    for document in documents:
        if not isinstance(document, Mapping) or "webhooks" not in document:
            continue
        webhooks = []
        for webhook in document["webhooks"]:
            path = webhook["clientConfig"]["service"]["path"]
            chosen = dict(replacements.get((webhook["name"], path), webhook))
            chosen["clientConfig"] = {"url": f"{url}{path}", "caBundle": bundle}
            webhooks.append(chosen)
        registrations.append({
            "apiVersion": document["apiVersion"],
            "kind": document["kind"],
            "metadata": {"name": f"{name}-{document['metadata']['name']}"},
            "webhooks": webhooks,
        })
    return registrations


def _require_free(name: str, port: int) -> None:
    """Say which port is in the way before the controller dies of it."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Go's listeners
        try:
            probe.bind(("0.0.0.0", port))
        except OSError as error:
            raise ClusterError(
                f"{name} listens on port {port} (compiled in, no flag moves it), and it is "
                f"taken: {error.strerror or error}. Stop what holds it (a Phalanx operator's "
                f"default metrics port is 8080: --metrics-port moves that one)") from None


def _load_all(folder: Path) -> list[Any]:
    return [
        document
        for path in sorted(folder.glob("*.yaml"))
        for document in yaml.safe_load_all(path.read_text())
        if document is not None
    ]


def _wait_ready(
    started: processes.Started, health_port: int, timeout: float, ready_line: str = ""
) -> None:
    """controller-runtime's /readyz: the webhook server is up (certificates read); or, for
    a controller without one, `ready_line` in its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = started.exit_code()
        if code is not None:
            tail = "\n".join(started.log.read_text(errors="replace").splitlines()[-20:])
            raise ClusterError(f"{started.name} exited with code {code}:\n{tail}")
        if ready_line:
            if ready_line in started.log.read_text(errors="replace"):
                return
            time.sleep(0.3)
            continue
        try:
            url = f"http://127.0.0.1:{health_port}/readyz"
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise ClusterError(f"{started.name} not ready after {timeout:.0f}s; see {started.log}")
