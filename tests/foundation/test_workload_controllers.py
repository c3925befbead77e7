"""How a workload controller's release manifests are turned into a loopback deployment
(pure: no build, no cluster)."""

from __future__ import annotations

import base64
from pathlib import Path

from phalanx.cluster.workload_controllers import KINDS, configuration, webhook_configurations

GENERATED = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "MutatingWebhookConfiguration",
    "metadata": {"name": "mutating-webhook-configuration"},
    "webhooks": [
        {"name": "mthing.kb.io", "failurePolicy": "Fail", "sideEffects": "None",
         "clientConfig": {"service": {"name": "webhook-service", "namespace": "system",
                                      "path": "/mutate-thing"}}},
        {"name": "mpod.kb.io", "failurePolicy": "Fail", "sideEffects": "None",
         "clientConfig": {"service": {"name": "webhook-service", "namespace": "system",
                                      "path": "/mutate--v1-pod"}}},
    ],
}
# The release's kustomize patch: pod webhooks only for the controller's own pods.
PATCH = [{"op": "replace", "path": "/webhooks/1", "value": {
    "name": "mpod.kb.io", "failurePolicy": "Fail", "sideEffects": "None",
    "objectSelector": {"matchExpressions": [{"key": "thing-name", "operator": "Exists"}]},
    "clientConfig": {"service": {"name": "webhook-service", "namespace": "system",
                                 "path": "/mutate--v1-pod"}}}}]
NAME_PATCH = [{"op": "replace", "path": "/metadata/name", "value": "defaulter.example"}]


def test_webhooks_point_at_loopback_with_the_ca_and_keep_the_release_patches() -> None:
    [registration] = webhook_configurations(
        [GENERATED, PATCH, NAME_PATCH], "thing", "https://127.0.0.1:9999", b"CA PEM"
    )
    assert registration["metadata"]["name"] == "thing-mutating-webhook-configuration"
    thing, pod = registration["webhooks"]
    bundle = base64.b64encode(b"CA PEM").decode()
    assert thing["clientConfig"] == {"url": "https://127.0.0.1:9999/mutate-thing",
                                     "caBundle": bundle}
    assert pod["clientConfig"] == {"url": "https://127.0.0.1:9999/mutate--v1-pod",
                                   "caBundle": bundle}
    assert pod["objectSelector"]["matchExpressions"][0]["key"] == "thing-name"
    assert "objectSelector" not in thing
    assert GENERATED["webhooks"][0]["clientConfig"]["service"]["path"] == "/mutate-thing"


def test_configuration_is_loopback_only_without_leader_election_or_own_certificates() -> None:
    for kind in KINDS.values():
        config = configuration(kind, 1, 2, 3, 4, Path("/certs"))
        assert config["apiVersion"] == kind.config_api
        assert config["leaderElection"] == {"leaderElect": False}
        assert config[kind.cert_management] == {"enable": False}
        assert config["webhook"]["host"] == "127.0.0.1" and config["webhook"]["port"] == 1
        assert config["metrics"]["bindAddress"] == "127.0.0.1:2"
        assert config["health"]["healthProbeBindAddress"] == "127.0.0.1:3"
        assert config["webhook"].get("certDir", "/certs") == "/certs"
