"""The two webhook configurations, one definition for every way they are installed (pure).

The manifests (manifests/webhook/) call the Service `phalanx-webhook` and get their CA
from cert-manager; on the local cluster (`settings.webhook.register_configurations`)
kube-apiserver calls the operator on loopback, trusting its self-signed certificate. Both
are these objects with a different `clientConfig`; tests/webhooks checks the manifests
against them.

- `phalanx-mutating`, pods on CREATE, failurePolicy Ignore: while Phalanx is down (or
  its certificate is wrong) pods are still created, unchanged; kube-scheduler places
  them one by one and the operator, once back, says so with an Event (`missed.py`).
- `phalanx-validating`, PodGroups and Queues on CREATE and UPDATE, failurePolicy Fail: an
  object the webhook cannot judge is refused, so a bad one never slips in while Phalanx is
  down (apply it again once it is up).
- Both leave out kube-system and Phalanx's own namespace (namespaceSelector), so the
  control plane and Phalanx itself never wait for Phalanx. Queues are cluster-scoped: a
  namespaceSelector does not apply to them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from phalanx.core.model.names import API_GROUP, API_VERSION
from phalanx.webhooks.names import (
    EXCLUDED_NAMESPACES,
    MUTATE_PODS,
    MUTATING_CONFIGURATION,
    VALIDATE_PODGROUPS,
    VALIDATE_QUEUES,
    VALIDATING_CONFIGURATION,
)

ClientConfig = Callable[[str], dict[str, Any]]  # a handler's path -> its clientConfig

POD_TIMEOUT_SECONDS = 5  # a pod's creation waits at most this long for Phalanx
CRD_TIMEOUT_SECONDS = 10
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every namespace


def namespace_selector() -> dict[str, Any]:
    return {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "NotIn",
                                  "values": list(EXCLUDED_NAMESPACES)}]}


def mutating_configuration(client: ClientConfig) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": MUTATING_CONFIGURATION},
        "webhooks": [{
            **_webhook("gang-pods", MUTATE_PODS, client, "Ignore", POD_TIMEOUT_SECONDS),
            "rules": [_rule("", "v1", "pods", ["CREATE"], "Namespaced")],
            "reinvocationPolicy": "Never",
        }],
    }


def validating_configuration(client: ClientConfig) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": VALIDATING_CONFIGURATION},
        "webhooks": [
            {**_webhook("podgroups", VALIDATE_PODGROUPS, client, "Fail", CRD_TIMEOUT_SECONDS),
             "rules": [_rule(API_GROUP, API_VERSION, "podgroups", ["CREATE", "UPDATE"],
                             "Namespaced")]},
            {**_webhook("queues", VALIDATE_QUEUES, client, "Fail", CRD_TIMEOUT_SECONDS),
             "rules": [_rule(API_GROUP, API_VERSION, "queues", ["CREATE", "UPDATE"],
                             "Cluster")]},
        ],
    }


def configurations(client: ClientConfig) -> list[dict[str, Any]]:
    return [mutating_configuration(client), validating_configuration(client)]


def _webhook(
    name: str, path: str, client: ClientConfig, failure: str, timeout: int
) -> dict[str, Any]:
    return {
        "name": f"{name}.{API_GROUP}",
        "clientConfig": client(path),
        "failurePolicy": failure,
        "matchPolicy": "Equivalent",
        "namespaceSelector": namespace_selector(),
        "sideEffects": "None",
        "timeoutSeconds": timeout,
        "admissionReviewVersions": ["v1"],
    }


def _rule(group: str, version: str, plural: str, operations: list[str],
          scope: str) -> dict[str, Any]:
    return {"apiGroups": [group], "apiVersions": [version], "resources": [plural],
            "operations": operations, "scope": scope}


def configuration_path(body: dict[str, Any]) -> str:
    """Where the API server keeps a webhook configuration."""
    plural = str(body["kind"]).lower() + "s"
    return f"/apis/admissionregistration.k8s.io/v1/{plural}/{body['metadata']['name']}"


def calls_the_same(current: Mapping[str, Any], registered: Mapping[str, Any]) -> bool:
    """Whether a configuration still sends its requests where `registered` did (no other
    operator has registered itself over it)."""
    def targets(body: Mapping[str, Any]) -> list[Any]:
        return [w.get("clientConfig", {}).get("url") for w in body.get("webhooks") or []]

    return targets(current) == targets(registered)
