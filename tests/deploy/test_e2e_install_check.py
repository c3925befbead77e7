"""`kubectl phalanx install-check` against the real local control plane: a healthy report
with the operator leading, and a deliberately broken webhook certificate named, both by the
plugin's own look at the certificate and by kube-apiserver failing to call the webhook.

The webhook here is a small TLS server started by the test, registered under the real
configuration names on the real API server, which calls it over TLS (no mock: the API
server's own TLS verification is what fails for a broken certificate)."""

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

from .operator_process import OperatorProcess

pytestmark = pytest.mark.e2e

NAMESPACE = "phalanx-system"
MUTATING, VALIDATING = "phalanx-mutating", "phalanx-validating"


@dataclass
class Webhook:
    """A TLS server answering AdmissionReviews (allowing everything), and what it saw."""

    url: str
    reviews: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture(scope="module")
def operator(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An operator replica leading through a Lease of its own; the settings file it runs
    with (the plugin reads the Lease's name from it)."""
    workdir = tmp_path_factory.mktemp("install-check")
    cluster.kubectl("create", "namespace", NAMESPACE, check=False)
    lease = f"install-check-{secrets.token_hex(3)}"
    settings = workdir / "settings.yaml"
    settings.write_text(yaml.safe_dump({"leader_election": {"lease_name": lease}}))
    process = OperatorProcess("operator", cluster.kubeconfig, workdir,
                              args=[f"--config={settings}"]).start()
    try:
        process.wait_for(lambda: _holder(cluster, lease), "the lease taken")
        yield settings
    finally:
        process.stop()
        process.ensure_dead()
        cluster.kubectl("delete", "lease", "-n", NAMESPACE, lease, check=False)


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


def configurations(url: str, ca: Path) -> list[dict[str, Any]]:
    """Both configurations under their real names, calling `url` and trusting `ca`."""
    bundle = base64.b64encode(ca.read_bytes()).decode()
    selector = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                      "values": ["kube-system", NAMESPACE]}]}

    def hook(name: str, path: str, policy: str, resources: list[str], group: str,
             version: str) -> dict[str, Any]:
        return {
            "name": name, "clientConfig": {"url": f"{url}/{path}", "caBundle": bundle},
            "rules": [{"apiGroups": [group], "apiVersions": [version], "resources": resources,
                       "operations": ["CREATE"]}],
            "failurePolicy": policy, "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "namespaceSelector": selector, "timeoutSeconds": 5,
        }

    return [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": {"name": MUTATING},
         "webhooks": [hook("pods.scheduling.phalanx.io", "mutate-pods", "Ignore", ["pods"],
                           "", "v1")]},
        {"apiVersion": "admissionregistration.k8s.io/v1",
         "kind": "ValidatingWebhookConfiguration", "metadata": {"name": VALIDATING},
         "webhooks": [hook("queues.scheduling.phalanx.io", "validate-queues", "Fail",
                           ["queues", "podgroups"], "scheduling.phalanx.io", "v1alpha1")]},
    ]


@pytest.fixture
def register(cluster: LocalCluster) -> Iterator[Any]:
    """Serve `pair` and register both configurations calling it; removed afterwards."""
    servers: list[ThreadingHTTPServer] = []

    def start(pair: ServingPair, ca: Path | None = None, host: str = "127.0.0.1") -> Webhook:
        server, webhook = serve(pair, host)
        servers.append(server)
        cluster.apply(configurations(webhook.url, ca or pair.ca_cert))
        return webhook

    yield start
    cluster.kubectl("delete", "mutatingwebhookconfigurations", MUTATING, check=False)
    cluster.kubectl("delete", "validatingwebhookconfigurations", VALIDATING, check=False)
    for server in servers:
        server.shutdown()
        server.server_close()


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
    cluster: LocalCluster, operator: Path, register: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    webhook = register(write_loopback_serving(tmp_path, "phalanx-webhook"))
    code, report = install_check(cluster, operator, monkeypatch)
    assert code == 0, report
    lines = report.splitlines()
    for crd in ("podgroups", "queues", "networktopologies"):
        assert f"  ok    {crd}.scheduling.phalanx.io: v1alpha1 served storage" in lines, report
    webhook_lines = [line for line in lines if "phalanx-" in line and "Lease" not in line]
    assert len(webhook_lines) == 3, report
    assert all(line.startswith("  ok    ") for line in webhook_lines), report
    assert re.search(rf"{VALIDATING}/queues.scheduling.phalanx.io: {webhook.url}/validate-queues "
                     r"\(failurePolicy Fail\): certificate CN=phalanx-webhook trusted by the "
                     r"caBundle, for 127.0.0.1, valid 36[45] more days", report), report
    assert f"  ok    {VALIDATING}: API server call: a dry-run Queue was admitted through it" in (
        lines)
    # The API server really called the webhook for the plugin's dry-run Queue.
    assert any(r["kind"]["kind"] == "Queue" and r["dryRun"] for r in webhook.reviews)
    lease = yaml.safe_load(operator.read_text())["leader_election"]["lease_name"]
    assert re.search(rf"  ok    Lease {NAMESPACE}/{lease}: leader \S+, version "
                     rf"{re.escape(__version__)}; renewed \d+ s ago \(lease 5 s\)", report), report
    assert "  ok    Job (batch/v1): served: its jobs get gangs" in lines
    assert re.search(r"  ok    nvidia.com/gpu: \d+ nodes, \d+ GPUs", report)
    for level, domains in (("block", 2), ("rack", 8)):
        assert re.search(rf"  ok    default/{level}: {domains} domains by ", report), report
    assert lines[-1].startswith("healthy: 0 failed"), report


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
    register(pair, ca=other if broken == "another CA" else None, host=host)
    code, report = install_check(cluster, operator, monkeypatch)
    assert code == 1, report
    mine, api_server = {
        "expired": ("certificate expired 2 days ago", "x509: certificate has expired"),
        "another CA": ("certificate not signed by the caBundle's CA (issuer "
                       "CN=phalanx-webhook-local-ca; caBundle holds CN=someone-else-local-ca)",
                       "x509: certificate signed by unknown authority"),
        "another host": ("certificate is not for 127.0.0.2 (it is for localhost, 127.0.0.1)",
                         "127.0.0.2"),
    }[broken]
    failed = failures(report)
    # The certificate is all that is wrong: both configurations' webhooks, and the API
    # server's own failed call through the validating one.
    assert len(failed) == 3, report
    hooks = [line for line in failed if "API server call" not in line]
    assert [line.split(":")[0] for line in hooks] == [
        f"FAIL  {MUTATING}/pods.scheduling.phalanx.io",
        f"FAIL  {VALIDATING}/queues.scheduling.phalanx.io"], report
    assert all(mine in line for line in hooks), report
    (call,) = [line for line in failed if "API server call" in line]
    assert call.startswith(f"FAIL  {VALIDATING}: API server call: failed calling webhook"), call
    assert api_server in call, call
    assert report.splitlines()[-1].startswith("unhealthy: 3 failed"), report


def test_nothing_listening_is_named_unreachable(
    cluster: LocalCluster, operator: Path, register: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`register` only to remove the configurations afterwards."""
    pair = write_loopback_serving(tmp_path, "phalanx-webhook")
    server, webhook = serve(pair)
    server.shutdown()
    server.server_close()  # the port is free now: nothing answers there
    cluster.apply(configurations(webhook.url, pair.ca_cert))
    code, report = install_check(cluster, operator, monkeypatch)
    assert code == 1, report
    port = webhook.url.rsplit(":", 1)[1]
    failed = failures(report)
    assert sum(f"unreachable: nothing listens at 127.0.0.1:{port} (connection refused)" in line
               for line in failed) == 2, report
    assert any("API server call: failed calling webhook" in line for line in failed), report
