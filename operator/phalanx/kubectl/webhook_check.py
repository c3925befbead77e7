"""The admission webhooks as the API server sees them: configured, reachable, trusted.

Two sources, both honest about what they saw. The certificate is judged against the
configuration's caBundle (`certificates.judge_certificate`): for a `url` the one served
there, read over TLS from this machine; for a `service` (not routable from a laptop) the
one in the Secret the operator mounts. And the validating configuration, which fails
closed, is exercised for real: the API server admits a dry-run Queue, and either the
webhook answered or the API server says why it could not call it. The pod webhook fails
open, so the API server hides its failures; only its endpoint and certificate are checked.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from phalanx.kubectl.certificates import judge_certificate
from phalanx.kubectl.checks import Check, Status, worst
from phalanx.webhooks.names import INJECT_CA_ANNOTATION
from phalanx.webhooks.names import MUTATING_CONFIGURATION as MUTATING
from phalanx.webhooks.names import VALIDATING_CONFIGURATION as VALIDATING

WARN_DAYS = 14.0  # cert-manager renews at 2/3 of a 90-day certificate: 30 days before

WITHOUT = {  # what a cluster lacks without the configuration
    MUTATING: "pods must name schedulerName phalanx (or carry the gate) themselves",
    VALIDATING: "an unknown queue or a parent cycle is accepted and only reported later",
}

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Endpoint:
    """Where the API server sends one webhook's reviews, and what was seen of it."""

    address: str  # the url, or service NAMESPACE/NAME:PORT/PATH
    host: str  # the name the API server verifies the certificate for
    certificate: bytes | None = None  # DER or PEM, as seen at `seen_at`
    seen_at: str = ""  # where the certificate was read
    unreachable: str = ""  # why nothing answers there (the API server cannot call it)
    unseen: str = ""  # why its certificate could not be read from here


@dataclass(frozen=True)
class ApiCall:
    """The API server's answer to a dry-run object the webhook reviews (kubectl's exit
    status and message)."""

    returncode: int
    message: str


@dataclass(frozen=True)
class WebhookConfiguration:
    name: str
    obj: Obj | None  # None: not installed
    endpoints: Mapping[str, Endpoint] = field(default_factory=dict)  # by webhook name
    api_call: ApiCall | None = None


def webhook_checks(
    configurations: Sequence[WebhookConfiguration], now: datetime, warn_days: float = WARN_DAYS
) -> list[Check]:
    checks: list[Check] = []
    for config in configurations:
        if config.obj is None:
            checks.append(Check("webhook", config.name, Status.WARN,
                                f"not installed: {WITHOUT.get(config.name, '')}".rstrip(": ")))
            continue
        hooks = list(config.obj.get("webhooks") or [])
        if not hooks:
            checks.append(Check("webhook", config.name, Status.FAIL, "lists no webhooks"))
        annotations = (config.obj.get("metadata") or {}).get("annotations") or {}
        for hook in hooks:
            name = str(hook.get("name") or "")
            endpoint = config.endpoints.get(name)
            checks.append(_hook(config.name, hook, endpoint, annotations, now, warn_days))
        if config.api_call is not None:
            fails_open = all(hook.get("failurePolicy") == "Ignore" for hook in hooks)
            checks.append(_api_call(config.name, config.api_call, fails_open))
    return checks


def _hook(
    configuration: str,
    hook: Obj,
    endpoint: Endpoint | None,
    annotations: Mapping[str, str],
    now: datetime,
    warn_days: float,
) -> Check:
    subject = f"{configuration}/{hook.get('name')}"
    policy = str(hook.get("failurePolicy") or "Fail")
    findings: list[tuple[Status, str]] = []
    bundle = _ca_bundle(hook, annotations, findings)
    if endpoint is None:
        return Check("webhook", subject, Status.FAIL, "clientConfig names neither url nor service")
    if endpoint.unreachable:
        findings.append((Status.FAIL, f"unreachable: {endpoint.unreachable}"))
    if endpoint.certificate is not None and bundle is not None:
        findings.append(_certificate(endpoint, bundle, now, warn_days))
    elif endpoint.unseen:
        findings.append((Status.WARN, f"certificate not checked: {endpoint.unseen}"))
    status = worst(s for s, _ in findings)
    detail = "; ".join(text for _, text in findings)
    return Check("webhook", subject, status, f"{endpoint.address} (failurePolicy {policy}): "
                 f"{detail}")


def _ca_bundle(
    hook: Obj, annotations: Mapping[str, str], findings: list[tuple[Status, str]]
) -> bytes | None:
    encoded = (hook.get("clientConfig") or {}).get("caBundle") or ""
    if not encoded:
        source = annotations.get(INJECT_CA_ANNOTATION)
        why = (f"cert-manager's CA injector has not filled it from Certificate {source}"
               if source else "the API server trusts only its own roots for it")
        findings.append((Status.FAIL, f"no caBundle ({why})"))
        return None
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        findings.append((Status.FAIL, "caBundle is not base64"))
        return None


def _certificate(
    endpoint: Endpoint, bundle: bytes, now: datetime, warn_days: float
) -> tuple[Status, str]:
    assert endpoint.certificate is not None
    try:
        verdict = judge_certificate(endpoint.certificate, bundle, endpoint.host, now)
    except ValueError as error:
        return Status.FAIL, f"certificate at {endpoint.seen_at} unreadable: {error}"
    where = f" (from {endpoint.seen_at})" if endpoint.seen_at else ""
    if verdict.problems:
        return Status.FAIL, "; ".join(verdict.problems) + where
    until = verdict.not_after.strftime("%Y-%m-%d")
    if verdict.days_left < warn_days:
        return Status.WARN, (f"certificate {verdict.subject} expires in {verdict.days_left:.1f} "
                             f"days ({until}){where}")
    return Status.OK, (f"certificate {verdict.subject} trusted by the caBundle, for "
                       f"{endpoint.host}, valid {verdict.days_left:.0f} more days ({until})"
                       f"{where}")


def _api_call(configuration: str, call: ApiCall, fails_open: bool) -> Check:
    subject = f"{configuration}: API server call"
    message = _server_message(call.message)
    if call.returncode == 0 and fails_open:
        return Check("webhook", subject, Status.WARN, "a dry-run Queue was admitted, but "
                     "failurePolicy Ignore admits it too when the call fails")
    if call.returncode == 0:
        return Check("webhook", subject, Status.OK, "a dry-run Queue was admitted through it")
    if "denied the request" in message:
        return Check("webhook", subject, Status.OK,
                     f"it answered (refused the dry-run Queue: {message})")
    if "failed calling webhook" in message:
        return Check("webhook", subject, Status.FAIL, message)
    return Check("webhook", subject, Status.WARN, f"could not be tried: {message}")


def _server_message(text: str) -> str:
    """kubectl's error without its prefixes: what the API server said."""
    text = " ".join(text.split())
    for prefix in ("Internal error occurred: ",):
        if prefix in text:
            text = text.split(prefix, 1)[1]
    if text.startswith("Error from server"):
        text = text.split(": ", 1)[-1]
    return text
