"""manifests/webhook/ agrees with the code: the configurations are the ones
`phalanx.webhooks.configurations` builds (called through the Service), and the Service,
Certificate, Secret, Deployment and settings name each other as the webhook needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deploy.rendering import MANIFESTS, Obj, only, render
from phalanx.config import load_settings
from phalanx.webhooks import names
from phalanx.webhooks.configurations import configurations


@pytest.fixture(scope="module")
def rendered() -> list[Obj]:
    return render(MANIFESTS)


def service_client(path: str) -> dict[str, Any]:
    return {"service": {"name": names.SERVICE, "namespace": names.NAMESPACE,
                        "path": "/" + path, "port": names.SERVICE_PORT}}


def test_the_configurations_are_the_code_s_called_through_the_service(
    rendered: list[Obj],
) -> None:
    for expected in configurations(service_client):
        found = only(rendered, expected["kind"], expected["metadata"]["name"])
        assert found["webhooks"] == expected["webhooks"]
        annotation = found["metadata"]["annotations"][names.INJECT_CA_ANNOTATION]
        assert annotation == f"{names.NAMESPACE}/{names.CERTIFICATE}"


def test_pods_fail_open_and_phalanx_objects_fail_closed_outside_its_own_namespaces(
    rendered: list[Obj],
) -> None:
    mutating = only(rendered, "MutatingWebhookConfiguration", names.MUTATING_CONFIGURATION)
    validating = only(rendered, "ValidatingWebhookConfiguration",
                      names.VALIDATING_CONFIGURATION)
    assert [w["failurePolicy"] for w in mutating["webhooks"]] == ["Ignore"]
    assert [w["failurePolicy"] for w in validating["webhooks"]] == ["Fail", "Fail"]
    for webhook in mutating["webhooks"] + validating["webhooks"]:
        [expression] = webhook["namespaceSelector"]["matchExpressions"]
        assert expression == {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                              "values": ["kube-system", "phalanx-system"]}
    assert [r["resources"] for w in validating["webhooks"] for r in w["rules"]] == [
        ["podgroups"], ["queues"]]


def test_service_certificate_secret_and_deployment_name_each_other(rendered: list[Obj]) -> None:
    service = only(rendered, "Service", names.SERVICE)
    [port] = service["spec"]["ports"]
    assert (port["port"], port["targetPort"]) == (names.SERVICE_PORT, names.PORT_NAME)
    certificate = only(rendered, "Certificate", names.CERTIFICATE)["spec"]
    assert certificate["secretName"] == names.TLS_SECRET
    assert f"{names.SERVICE}.{names.NAMESPACE}.svc" in certificate["dnsNames"]
    issuer = only(rendered, "Issuer", names.ISSUER)
    assert certificate["issuerRef"] == {"kind": "Issuer", "name": issuer["metadata"]["name"]}
    pod = only(rendered, "Deployment", "phalanx")["spec"]["template"]["spec"]
    [operator] = pod["containers"]
    ports = {p["name"]: p["containerPort"] for p in operator["ports"]}
    assert ports[names.PORT_NAME] == names.CONTAINER_PORT
    [volume] = [v for v in pod["volumes"] if v.get("secret")]
    assert volume["secret"]["secretName"] == names.TLS_SECRET
    [mount] = [m for m in operator["volumeMounts"] if m["name"] == volume["name"]]
    env = {e["name"]: e["value"] for e in operator["env"] if "value" in e}
    assert mount["mountPath"] == env["PHALANX_WEBHOOK__CERT_DIR"] == names.CERT_DIR


def test_the_pod_runs_the_webhook_on_its_port_with_the_mounted_certificate(
    rendered: list[Obj], tmp_path: Path
) -> None:
    [operator] = only(rendered, "Deployment", "phalanx")["spec"]["template"]["spec"][
        "containers"]
    env = {e["name"]: e["value"] for e in operator["env"]
           if e["name"].startswith("PHALANX_WEBHOOK__")}
    settings = load_settings(MANIFESTS / "operator" / "config.yaml", env=env)
    assert settings.webhook.enabled and not settings.webhook.register_configurations
    assert settings.webhook.cert_dir == names.CERT_DIR
    assert settings.webhook.port == names.CONTAINER_PORT
