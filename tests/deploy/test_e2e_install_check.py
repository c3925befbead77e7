"""`kubectl phalanx install-check` against the real local control plane: a healthy report
with the operator leading and serving its webhooks (registered on loopback, as `make run`
does), and a deliberately broken webhook certificate named, both by the plugin's own look at
the certificate and by kube-apiserver failing to call the webhook.

A broken certificate is served by a small TLS server the test starts, registered in the
operator's own webhook configurations (`phalanx.webhooks.configurations`) on the real API
server, which calls it over TLS: its own verification is what fails, no mock."""

from __future__ import annotations

import base64
import io
import json
import re
import secrets
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx import __version__
from phalanx.cluster import LocalCluster
from phalanx.cluster.binaries import binary
from phalanx.cluster.pki import ServingPair, write_loopback_serving
from phalanx.kubectl.main import main
from phalanx.webhooks.certificate import self_signed
from phalanx.webhooks.configurations import configurations
from phalanx.webhooks.names import MUTATING_CONFIGURATION as MUTATING
from phalanx.webhooks.names import NAMESPACE, SERVICE, TLS_SECRET
from phalanx.webhooks.names import VALIDATING_CONFIGURATION as VALIDATING

from .operator_process import OperatorProcess, account_kubeconfig

pytestmark = pytest.mark.e2e

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests" / "webhook"
SLICE = "phalanx-webhook-install-check"
REGISTRATIONS = (f"mutatingwebhookconfigurations/{MUTATING}",
                 f"validatingwebhookconfigurations/{VALIDATING}")


@dataclass
class Webhook:
    """A TLS server answering AdmissionReviews (allowing everything), and what it saw."""

    url: str
    reviews: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture(scope="module")
def operator(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An operator replica leading through a Lease of its own and serving its webhooks,
    registered; the settings file it runs with (the plugin reads the Lease's name there)."""
    workdir = tmp_path_factory.mktemp("install-check")
    cluster.kubectl("create", "namespace", NAMESPACE, check=False)
    lease = f"install-check-{secrets.token_hex(3)}"
    settings = workdir / "settings.yaml"
    settings.write_text(yaml.safe_dump({
        "leader_election": {"lease_name": lease},
        "webhook": {"enabled": True, "register_configurations": True, "host": "127.0.0.1",
                    "port": 0},
    }))
    process = OperatorProcess("operator", cluster.kubeconfig, workdir,
                              args=[f"--config={settings}"]).start()
    try:
        process.wait_for(lambda: _holder(cluster, lease), "the lease taken")
        process.wait_for(lambda: len(_registered(cluster)) == 3, "the webhooks registered")
        yield settings
    finally:
        process.stop()
        process.ensure_dead()
        cluster.kubectl("delete", "lease", "-n", NAMESPACE, lease, check=False)
        cluster.kubectl("delete", "--ignore-not-found", *REGISTRATIONS)


def _registered(cluster: LocalCluster) -> list[str]:
    """The urls of the webhooks registered under Phalanx's configuration names."""
    done = cluster.kubectl("get", *REGISTRATIONS, "-o", "json", check=False)
    if done.returncode != 0:
        return []
    return [str(hook["clientConfig"].get("url")) for item in json.loads(done.stdout)["items"]
            for hook in item.get("webhooks") or []]


def _holder(cluster: LocalCluster, lease: str) -> str:
    done = cluster.kubectl("get", "lease", "-n", NAMESPACE, lease, "-o", "json", check=False)
    if done.returncode != 0:
        return ""
    return str(json.loads(done.stdout)["spec"].get("holderIdentity") or "")


def serve(pair: ServingPair, host: str = "127.0.0.1") -> tuple[ThreadingHTTPServer, Webhook]:
    webhook = Webhook(url="")

    class Review(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            webhook.reviews.append(review["request"])
            body = json.dumps({
                "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": {"uid": review["request"]["uid"], "allowed": True},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            return

    server = ThreadingHTTPServer((host, 0), Review)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pair.cert, pair.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    webhook.url = f"https://{host}:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, webhook


def registering(url: str, ca: Path) -> list[dict[str, Any]]:
    """Phalanx's two configurations, calling `url` and trusting `ca`."""
    bundle = base64.b64encode(ca.read_bytes()).decode()
    return configurations(lambda path: {"url": f"{url}/{path}", "caBundle": bundle})


def _saved(cluster: LocalCluster) -> list[dict[str, Any]]:
    """The registered configurations, as objects to create again."""
    found = json.loads(cluster.kubectl("get", *REGISTRATIONS, "-o", "json").stdout)["items"]
    for item in found:
        item["metadata"] = {"name": item["metadata"]["name"]}
    return list(found)


@pytest.fixture
def restored(cluster: LocalCluster, operator: Path) -> Iterator[None]:
    """The operator's own registrations put back after the test replaced them."""
    saved = _saved(cluster)
    yield
    replace(cluster, saved)


@pytest.fixture
def register(cluster: LocalCluster, restored: None) -> Iterator[Any]:
    """`register(pair)`: serve `pair` and point Phalanx's configurations at it instead of
    the operator."""
    servers: list[ThreadingHTTPServer] = []

    def start(pair: ServingPair, ca: Path | None = None, host: str = "127.0.0.1") -> Webhook:
        server, webhook = serve(pair, host)
        servers.append(server)
        replace(cluster, registering(webhook.url, ca or pair.ca_cert))
        return webhook

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def replace(cluster: LocalCluster, objects: list[dict[str, Any]]) -> None:
    cluster.kubectl("delete", "--ignore-not-found", *REGISTRATIONS)
    cluster.apply(objects)


def install_check(cluster: LocalCluster, settings: Path,
                  monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.setenv("PHALANX_KUBECTL", str(binary("kubectl")))
    out = io.StringIO()
    code = main(["--kubeconfig", str(cluster.kubeconfig), "--config", str(settings),
                 "install-check"], out=out)
    return code, out.getvalue()


def failures(report: str) -> list[str]:
    return [line.strip() for line in report.splitlines() if line.startswith("  FAIL")]


def test_a_healthy_install_reports_every_part_ok(
    cluster: LocalCluster, operator: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, report = install_check(cluster, operator, monkeypatch)
    assert code == 0, report
    lines = report.splitlines()
    for crd in ("podgroups", "queues", "networktopologies"):
        assert f"  ok    {crd}.scheduling.phalanx.io: v1alpha1 served storage" in lines, report
    # The operator's own webhooks: its self-signed certificate, served where it registered
    # them, and the API server calling the validating one for the plugin's dry-run Queue.
    (url,) = {u.rsplit("/", 1)[0] for u in _registered(cluster)}
    for hook, path, policy in (
        (f"{MUTATING}/gang-pods", "mutate-pods", "Ignore"),
        (f"{VALIDATING}/podgroups", "validate-podgroups", "Fail"),
        (f"{VALIDATING}/queues", "validate-queues", "Fail"),
    ):
        assert re.search(
            rf"  ok    {hook}.scheduling.phalanx.io: {url}/{path} \(failurePolicy {policy}\): "
            r"certificate CN=127.0.0.1 trusted by the caBundle, for 127.0.0.1, valid 36[45] "
            r"more days", report), report
    assert f"  ok    {VALIDATING}: API server call: a dry-run Queue was admitted through it" in (
        lines)
    lease = yaml.safe_load(operator.read_text())["leader_election"]["lease_name"]
    assert re.search(rf"  ok    Lease {NAMESPACE}/{lease}: leader \S+, version "
                     rf"{re.escape(__version__)}; renewed \d+ s ago \(lease 5 s\)", report), report
    assert "  ok    Job (batch/v1): served: its jobs get gangs" in lines
    assert re.search(r"  ok    nvidia.com/gpu: \d+ nodes, \d+ GPUs", report)
    for level, domains in (("block", 2), ("rack", 8)):
        assert re.search(rf"  ok    default/{level}: {domains} domains by ", report), report
    assert lines[-1].startswith("healthy: 0 failed"), report


HOOKS = [f"{MUTATING}/gang-pods.scheduling.phalanx.io",
         f"{VALIDATING}/podgroups.scheduling.phalanx.io",
         f"{VALIDATING}/queues.scheduling.phalanx.io"]


@pytest.mark.parametrize("broken", ["expired", "another CA", "another host"])
def test_a_broken_webhook_certificate_is_named(
    cluster: LocalCluster, operator: Path, register: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, broken: str,
) -> None:
    now = datetime.now(UTC)
    expiry = now - timedelta(days=2) if broken == "expired" else None
    pair = write_loopback_serving(tmp_path / "served", "phalanx-webhook", not_after=expiry)
    other = write_loopback_serving(tmp_path / "other", "someone-else").ca_cert
    host = "127.0.0.2" if broken == "another host" else "127.0.0.1"
    webhook = register(pair, ca=other if broken == "another CA" else None, host=host)
    code, report = install_check(cluster, operator, monkeypatch)
    assert code == 1, report
    mine, api_server = {
        "expired": ("certificate expired 2 days ago", "x509: certificate has expired"),
        "another CA": ("certificate not signed by the caBundle's CA (issuer "
                       "CN=phalanx-webhook-local-ca; caBundle holds CN=someone-else-local-ca)",
                       "x509: certificate signed by unknown authority"),
        "another host": ("certificate is not for 127.0.0.2 (it is for localhost, 127.0.0.1)",
                         "x509: certificate is valid for 127.0.0.1, not 127.0.0.2"),
    }[broken]
    failed = failures(report)
    # The certificate is all that is wrong: each webhook of both configurations, and the
    # API server's own failed call through the validating one.
    assert len(failed) == 4, report
    hooks = [line for line in failed if "API server call" not in line]
    assert [line.split(": ")[0] for line in hooks] == [f"FAIL  {hook}" for hook in HOOKS], report
    assert all(mine in line and webhook.url in line for line in hooks), report
    (call,) = [line for line in failed if "API server call" in line]
    assert call.startswith(f"FAIL  {VALIDATING}: API server call: failed calling webhook"), call
    assert api_server in call, call
    assert not webhook.reviews  # the API server never got through
    assert report.splitlines()[-1].startswith("unhealthy: 4 failed"), report


def test_nothing_listening_is_named_unreachable(
    cluster: LocalCluster, operator: Path, register: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pair = write_loopback_serving(tmp_path, "phalanx-webhook")
    server, webhook = serve(pair)
    server.shutdown()
    server.server_close()  # the port is free now: nothing answers there
    replace(cluster, registering(webhook.url, pair.ca_cert))  # `register` puts back after
    code, report = install_check(cluster, operator, monkeypatch)
    assert code == 1, report
    port = webhook.url.rsplit(":", 1)[1]
    failed = failures(report)
    assert sum(f"unreachable: nothing listens at 127.0.0.1:{port} (connection refused)" in line
               for line in failed) == 3, report
    assert any("API server call: failed calling webhook" in line for line in failed), report


@pytest.fixture
def as_installed(cluster: LocalCluster, restored: None) -> Iterator[None]:
    """The webhook objects of manifests/webhook/ (Service, both configurations calling it),
    as `kubectl apply -k manifests/` installs them, without cert-manager."""
    cluster.kubectl("delete", "--ignore-not-found", *REGISTRATIONS)
    for name in ("service.yaml", "mutating.yaml", "validating.yaml"):
        cluster.apply(MANIFESTS / name)
    yield
    for kind in ("secrets/" + TLS_SECRET, "services/" + SERVICE,
                 "endpointslices.discovery.k8s.io/" + SLICE):
        cluster.kubectl("delete", "-n", NAMESPACE, "--ignore-not-found", kind)


def test_a_service_webhook_without_cert_manager_is_named_and_then_checked_from_its_secret(
    cluster: LocalCluster, operator: Path, as_installed: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without cert-manager: no caBundle, no Secret, no pod behind the Service, each named.
    Then what cert-manager and a Ready operator pod would add: the certificate is judged
    from the Secret; the API server still cannot call a Service of this pod-less cluster,
    and says why in its own words."""
    code, report = install_check(cluster, operator, monkeypatch)
    assert code == 1, report
    failed = failures(report)
    hooks = [line for line in failed if "API server call" not in line]
    assert [line.split(": ")[0] for line in hooks] == [f"FAIL  {hook}" for hook in HOOKS], report
    for line in hooks:
        assert f"service {NAMESPACE}/{SERVICE}:443/" in line, line
        assert ("no caBundle (cert-manager's CA injector has not filled it from Certificate "
                f"{NAMESPACE}/phalanx-webhook)") in line, line
        assert (f"unreachable: Service {NAMESPACE}/{SERVICE} has no ready endpoint "
                "(is the operator running and Ready?)") in line, line
        assert f"certificate not checked: Secret {NAMESPACE}/{TLS_SECRET}: " in line, line
        assert "NotFound" in line, line

    host = f"{SERVICE}.{NAMESPACE}.svc"
    cert, key = self_signed([host, f"{host}.cluster.local"])
    cluster.apply([{
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": TLS_SECRET, "namespace": NAMESPACE},
        "data": {name: base64.b64encode(value).decode()
                 for name, value in (("tls.crt", cert), ("tls.key", key), ("ca.crt", cert))},
    }, {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": SLICE, "namespace": NAMESPACE,
                     "labels": {"kubernetes.io/service-name": SERVICE,
                                "endpointslice.kubernetes.io/managed-by": "phalanx-tests"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.244.1.7"], "conditions": {"ready": True}}],
        "ports": [{"name": "webhook", "port": 9443, "protocol": "TCP"}],
    }])
    bundle = base64.b64encode(cert).decode()
    for kind, name, hooks_of in (("mutatingwebhookconfigurations", MUTATING, 1),
                                 ("validatingwebhookconfigurations", VALIDATING, 2)):
        patch = [{"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": bundle}
                 for i in range(hooks_of)]
        cluster.kubectl("patch", kind, name, "--type=json", "-p", json.dumps(patch))
    code, report = install_check(cluster, operator, monkeypatch)
    assert code == 1, report
    for hook in HOOKS:
        assert re.search(rf"  ok    {hook}: service {NAMESPACE}/{SERVICE}:443/\S+ \(failurePolicy "
                         rf"\w+\): certificate CN={host} trusted by the caBundle, for {host}, "
                         rf"valid 36[45] more days \(\S+\) \(from Secret "
                         rf"{NAMESPACE}/{TLS_SECRET}\)", report), report
    (call,) = failures(report)
    assert call.startswith(f"FAIL  {VALIDATING}: API server call: failed calling webhook "
                           '"queues.scheduling.phalanx.io"'), call
    assert f"https://{host}:443/validate-queues" in call, call


def test_a_user_who_may_read_little_is_told_what_was_refused(
    cluster: LocalCluster, operator: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As an account bound to the built-in `view` role (no CRDs, webhook configurations,
    Leases or nodes): each refused read is a finding of its area, the rest still checked."""
    account = f"viewer-{secrets.token_hex(3)}"
    cluster.kubectl("create", "serviceaccount", account, "-n", NAMESPACE)
    cluster.kubectl("create", "clusterrolebinding", account, "--clusterrole=view",
                    f"--serviceaccount={NAMESPACE}:{account}")
    try:
        kubeconfig = account_kubeconfig(cluster, tmp_path / "viewer", account, NAMESPACE)
        monkeypatch.setenv("PHALANX_KUBECTL", str(binary("kubectl")))
        out = io.StringIO()
        code = main(["--kubeconfig", str(kubeconfig), "--config", str(operator),
                     "install-check"], out=out)
    finally:
        cluster.kubectl("delete", "clusterrolebinding", account, check=False)
        cluster.kubectl("delete", "serviceaccount", account, "-n", NAMESPACE, check=False)
    report = out.getvalue()
    assert code == 1, report
    refused = [line for line in report.splitlines()
               if line.startswith("  FAIL  read: cannot read: ")]
    sections = [line for line in report.splitlines() if not line.startswith(" ")][:-1]
    assert len(refused) == 5, report  # one each: CRDs, webhook, operator, nodes, topology
    for kind in ("customresourcedefinitions", "mutatingwebhookconfigurations", "leases",
                 "nodes", "networktopologies"):
        assert sum(f'cannot get resource "{kind}"' in line or f'cannot list resource "{kind}"'
                   in line for line in refused) == 1, report
    assert sections == ["CRDs", "webhook", "operator", "workloads", "nodes", "topology"]
    assert "  ok    Job (batch/v1): served: its jobs get gangs" in report.splitlines()
