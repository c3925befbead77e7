"""Reading what `install-check` judges: kubectl for the API objects, a TLS handshake for a
webhook's served certificate, and one dry-run request the API server admits through the
validating webhook. Nothing is written: the dry-run object is never stored.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import secrets
import socket
import ssl
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import yaml

from phalanx.config.settings import LeaderElection
from phalanx.core.model.names import API_GROUP, GROUP_VERSION
from phalanx.kubectl.fetch import Kubectl, Obj, PluginError
from phalanx.kubectl.install_check import InstallFacts
from phalanx.kubectl.webhook_check import ApiCall, Endpoint, WebhookConfiguration
from phalanx.webhooks.names import MUTATING_CONFIGURATION as MUTATING
from phalanx.webhooks.names import TLS_SECRET as WEBHOOK_SECRET
from phalanx.webhooks.names import VALIDATING_CONFIGURATION as VALIDATING
from phalanx.workloads.kinds import WORKLOAD_KINDS

CONFIGURATION_KINDS = {
    MUTATING: "mutatingwebhookconfigurations.admissionregistration.k8s.io",
    VALIDATING: "validatingwebhookconfigurations.admissionregistration.k8s.io",
}
TLS_TIMEOUT_SECONDS = 5.0
T = TypeVar("T")


def read_facts(kubectl: Kubectl, election: LeaderElection, crd_dir: Path | None) -> InstallFacts:
    """Discovery first: if the API server cannot be reached at all, that is the one error.
    Past it, a read refused (RBAC: a user may not read Leases or Secrets) becomes a
    finding of its area, and the other areas are still checked."""
    served, group_versions = discovery(kubectl)
    reads = _Reads()
    expected = expected_crds(crd_dir)
    names = [str(crd["metadata"]["name"]) for crd in expected]
    installed = reads("CRDs", lambda: kubectl.items(
        "customresourcedefinitions.apiextensions.k8s.io", *names, "--ignore-not-found"
    ) if names else [])
    webhooks = reads("webhook", lambda: [
        webhook_configuration(kubectl, name) for name in CONFIGURATION_KINDS])
    lease = reads("operator", lambda: kubectl.items(
        "leases.coordination.k8s.io", election.lease_name, "-n", election.lease_namespace,
        "--ignore-not-found"))
    return InstallFacts(
        expected_crds=expected,
        crds=None if installed is None else {str(c["metadata"]["name"]): c for c in installed},
        webhooks=webhooks or (),
        lease_name=f"{election.lease_namespace}/{election.lease_name}",
        lease=lease[0] if lease else None,
        lease_read=lease is not None,
        served=served,
        group_versions=group_versions,
        nodes=reads("nodes", lambda: kubectl.items("nodes")),
        topologies=reads("topology", lambda: kubectl.items(f"networktopologies.{API_GROUP}")),
        unreadable=tuple(reads.errors),
    )


class _Reads:
    """Runs one area's reads; a refusal is kept as (area, message) and gives None."""

    def __init__(self) -> None:
        self.errors: list[tuple[str, str]] = []

    def __call__(self, area: str, read: Callable[[], T]) -> T | None:
        try:
            return read()
        except PluginError as error:  # kubectl says it once per object: once is enough
            self.errors.append((area, str(error).splitlines()[0]))
            return None


def expected_crds(folder: Path | None) -> list[Obj]:
    """The CRDs this plugin's version ships (crds/ of its checkout), by file name."""
    if folder is None or not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                found.append(doc)
    return found


def discovery(kubectl: Kubectl) -> tuple[dict[str, frozenset[str]], dict[str, tuple[str, ...]]]:
    """The plurals served at each group/version a workload kind needs, and every group's
    served versions (to tell "not installed" from "installed at another version")."""
    groups = {
        str(g.get("name")): tuple(str(v.get("version")) for v in g.get("versions") or [])
        for g in kubectl.raw("/apis").get("groups") or []
    }
    served: dict[str, frozenset[str]] = {}
    for kind in WORKLOAD_KINDS:
        gv = kind.api_version
        if gv in served or kind.version not in groups.get(kind.group, ()):
            continue
        try:
            resources = kubectl.raw(f"/apis/{gv}").get("resources") or []
        except PluginError:  # removed between the two reads
            continue
        served[gv] = frozenset(str(r.get("name")) for r in resources)
    return served, groups


def webhook_configuration(kubectl: Kubectl, name: str) -> WebhookConfiguration:
    found = kubectl.items(CONFIGURATION_KINDS[name], name, "--ignore-not-found")
    if not found:
        return WebhookConfiguration(name, None)
    obj = found[0]
    endpoints = {
        str(hook.get("name")): endpoint(kubectl, hook.get("clientConfig") or {})
        for hook in obj.get("webhooks") or []
    }
    call = api_call(kubectl) if name == VALIDATING else None
    return WebhookConfiguration(name, obj, endpoints, call)


def endpoint(kubectl: Kubectl, client_config: Mapping[str, Any]) -> Endpoint:
    url = client_config.get("url")
    if url:
        return url_endpoint(str(url))
    service = client_config.get("service")
    if service:
        return service_endpoint(kubectl, service)
    return Endpoint("(none)", "", unreachable="clientConfig names neither url nor service")


def url_endpoint(url: str) -> Endpoint:
    """A webhook the API server dials by url: the certificate it is served, read here."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 443
    try:
        der = served_certificate(host, port)
    except OSError as error:
        return Endpoint(url, host, unreachable=_connection_error(host, port, error))
    return Endpoint(url, host, der, seen_at=f"{host}:{port}")


def served_certificate(host: str, port: int, timeout: float = TLS_TIMEOUT_SECONDS) -> bytes:
    """The leaf certificate the server presents, unverified (judged afterwards, so a bad
    one can be described instead of refused)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection((host, port), timeout=timeout) as raw, \
            context.wrap_socket(raw, server_hostname=host) as tls:
        der = tls.getpeercert(binary_form=True)
    if not der:
        raise ssl.SSLError(f"{host}:{port} presented no certificate")
    return der


def _connection_error(host: str, port: int, error: OSError) -> str:
    if isinstance(error, ConnectionRefusedError):
        return f"nothing listens at {host}:{port} (connection refused)"
    if isinstance(error, TimeoutError):
        return f"no answer from {host}:{port} within {TLS_TIMEOUT_SECONDS:g} s"
    if isinstance(error, ssl.SSLError):
        return f"TLS handshake with {host}:{port} failed: {error.reason or error}"
    return f"{host}:{port}: {error.strerror or error}"


def service_endpoint(kubectl: Kubectl, service: Mapping[str, Any]) -> Endpoint:
    """A webhook behind a Service. Its address is not routable from outside the cluster, so
    what is checked is what the API server needs: ready endpoints behind the Service, and
    the certificate in the Secret the operator serves (a pod started before a renewal still
    serves the older one until it restarts)."""
    namespace, name = str(service.get("namespace")), str(service.get("name"))
    port, path = int(service.get("port") or 443), str(service.get("path") or "/")
    address, host = f"service {namespace}/{name}:{port}{path}", f"{name}.{namespace}.svc"
    unreachable = ""
    if not kubectl.items("services", name, "-n", namespace, "--ignore-not-found"):
        unreachable = f"Service {namespace}/{name} not found"
    elif not _ready_endpoint(kubectl.items("endpointslices.discovery.k8s.io", "-n", namespace,
                                           "-l", f"kubernetes.io/service-name={name}")):
        unreachable = (f"Service {namespace}/{name} has no ready endpoint (is the operator "
                       "running and Ready?)")
    secret = f"Secret {namespace}/{WEBHOOK_SECRET}"
    done = kubectl.attempt("get", "secrets", WEBHOOK_SECRET, "-n", namespace, "-o", "json")
    if done.returncode != 0:
        return Endpoint(address, host, unreachable=unreachable,
                        unseen=f"{secret}: {done.stderr.strip()}")
    try:
        cert = base64.b64decode(json.loads(done.stdout)["data"]["tls.crt"], validate=True)
    except (KeyError, TypeError, ValueError, binascii.Error):
        return Endpoint(address, host, unreachable=unreachable, unseen=f"{secret} has no tls.crt")
    return Endpoint(address, host, cert, seen_at=secret, unreachable=unreachable)


def _ready_endpoint(slices: Sequence[Obj]) -> bool:
    return any(
        (ep.get("conditions") or {}).get("ready") is not False
        for piece in slices
        for ep in piece.get("endpoints") or []
    )


def api_call(kubectl: Kubectl) -> ApiCall:
    """Ask the API server to admit a Queue without storing it (dry run): the validating
    webhook reviews it, so the answer says whether the API server can call the webhook."""
    probe = {
        "apiVersion": GROUP_VERSION,
        "kind": "Queue",
        "metadata": {"name": f"phalanx-install-check-{secrets.token_hex(3)}"},
        "spec": {},
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(probe, file)
    try:
        done = kubectl.attempt("create", "--dry-run=server", "-o", "name", "-f", file.name)
    finally:
        os.unlink(file.name)
    return ApiCall(done.returncode, (done.stderr or done.stdout).strip())
