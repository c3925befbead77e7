"""The names the webhooks share with the manifests, the Helm chart and `kubectl phalanx
install-check`: fixed, since each of those finds the webhooks by them."""

from __future__ import annotations

MUTATING_CONFIGURATION = "phalanx-mutating"
VALIDATING_CONFIGURATION = "phalanx-validating"
NAMESPACE = "phalanx-system"  # the operator's own, left out of both webhooks
EXCLUDED_NAMESPACES = ("kube-system", NAMESPACE)
SERVICE = "phalanx-webhook"
SERVICE_PORT = 443
CONTAINER_PORT = 9443
PORT_NAME = "webhook"
TLS_SECRET = "phalanx-webhook-tls"
CERTIFICATE = "phalanx-webhook"
ISSUER = "phalanx-selfsigned"
INJECT_CA_ANNOTATION = "cert-manager.io/inject-ca-from"
CERT_DIR = "/etc/phalanx-webhook"  # where the Deployment mounts the Secret

# Kopf serves each handler at /<its id>; the configurations call these paths.
MUTATE_PODS = "mutate-pods"
VALIDATE_PODGROUPS = "validate-podgroups"
VALIDATE_QUEUES = "validate-queues"
