"""charts/phalanx: `helm lint` passes, and `helm template` renders what `kubectl apply -k
manifests/` applies (same objects, same RBAC rules, same Deployment), the monitoring parts
what manifests/monitoring/ adds; values change what they say, bad values are refused with
the value's name."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
import yaml

from phalanx.config import load_settings

from .helm import (
    CHART,
    CHECKSUM_ANNOTATION,
    CONFIG_MAP,
    config_data,
    differences,
    helm,
    key,
    keyed,
    render_chart,
    unhash_config_map,
)
from .rendering import MANIFESTS, REPO, Obj, only, render

NAMESPACE = "phalanx-system"
ROLE_KINDS = ("ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding")
CLUSTER_SCOPED = ("ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                  "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
MONITORING = {"serviceMonitor.enabled": "true", "grafanaDashboard.enabled": "true"}


@pytest.fixture(scope="module")
def charted() -> list[Obj]:
    return render_chart()


@pytest.fixture(scope="module")
def kustomized() -> list[Obj]:
    return render(MANIFESTS)


def deployment(objects: list[Obj]) -> Obj:
    return only(objects, "Deployment", "phalanx")


# -- helm lint, helm package -------------------------------------------------------------------


@pytest.mark.parametrize("values", [
    {}, MONITORING, {"replicas": "1", "namespace.create": "false"},
    {"webhook.certificate": "secret", "webhook.caBundle": "Q0EK"}, {"webhook.enabled": "false"},
])
def test_helm_lint_passes(values: dict[str, str]) -> None:
    args = [arg for k, v in values.items() for arg in ("--set", f"{k}={v}")]
    result = helm("lint", "--strict", str(CHART), *args)
    assert "0 chart(s) failed" in result.stdout, result.stdout


def test_packaged_chart_holds_the_linked_files_and_renders_the_same(
    charted: list[Obj], tmp_path: Path
) -> None:
    """crds/ and files/ are symlinks into crds/ and manifests/: `helm package` stores their
    content, so the package installs anywhere and renders exactly as the folder does."""
    assert (CHART / "crds").is_symlink() and (CHART / "crds").resolve() == REPO / "crds"
    helm("package", str(CHART), "--destination", str(tmp_path))
    (package,) = tmp_path.glob("phalanx-*.tgz")
    with tarfile.open(package) as archive:
        names = set(archive.getnames())
        members = {m.name: m for m in archive.getmembers()}
    for crd in sorted((REPO / "crds").glob("*.yaml")):
        assert f"phalanx/crds/{crd.name}" in names
        assert members[f"phalanx/crds/{crd.name}"].isfile()
    assert members["phalanx/files/config.yaml"].isfile()
    assert render_chart(chart=package) == charted


# -- parity with manifests/ --------------------------------------------------------------------


def test_chart_renders_the_same_objects_as_the_kustomize_base(
    charted: list[Obj], kustomized: list[Obj]
) -> None:
    """Same (kind, namespace, name) set, and each object the same but for Helm's own labels,
    the checksum annotation and kustomize's hash suffix on phalanx-config (see helm.py)."""
    assert differences(kustomized, charted) == []


def test_rbac_rules_and_bindings_are_exactly_the_kustomize_ones(
    charted: list[Obj], kustomized: list[Obj]
) -> None:
    # Covered by the test above too; spelled out because widening the operator's rights in
    # one install and not the other is the drift that matters most.
    ours, theirs = keyed(charted), keyed(kustomized)
    roles = {k for k in theirs if k[0] in ROLE_KINDS}
    assert roles == {k for k in ours if k[0] in ROLE_KINDS}
    for k in roles:
        for field in ("rules", "roleRef", "subjects"):
            assert ours[k].get(field) == theirs[k].get(field), (k, field)


def test_deployment_essentials_are_the_kustomize_ones(
    charted: list[Obj], kustomized: list[Obj]
) -> None:
    ours, theirs = deployment(charted), deployment(unhash_config_map(kustomized))
    assert ours["spec"]["replicas"] == theirs["spec"]["replicas"] == 2
    pod, other = ours["spec"]["template"]["spec"], theirs["spec"]["template"]["spec"]
    for field in ("serviceAccountName", "securityContext", "volumes", "affinity"):
        assert pod[field] == other[field], field
    (mine,), (their,) = pod["containers"], other["containers"]
    for field in ("image", "args", "env", "ports", "livenessProbe", "readinessProbe",
                  "securityContext", "volumeMounts", "resources"):
        assert mine[field] == their[field], field


def test_settings_are_the_shipped_file(charted: list[Obj], kustomized: list[Obj]) -> None:
    shipped = yaml.safe_load((MANIFESTS / "operator" / "config.yaml").read_text())
    ours = config_data(only(charted, "ConfigMap", CONFIG_MAP))
    theirs = config_data(only(unhash_config_map(kustomized), "ConfigMap", CONFIG_MAP))
    assert ours == theirs == {"config.yaml": shipped}


def test_the_comparison_sees_a_changed_rule_and_a_missing_object(
    charted: list[Obj], kustomized: list[Obj]
) -> None:
    """The parity test can fail: one verb more, or one object less, is reported."""
    widened = [dict(o) for o in charted]
    role = next(o for o in widened if key(o) == ("ClusterRole", "", "phalanx"))
    role["rules"] = [*role["rules"], {"apiGroups": [""], "resources": ["secrets"],
                                      "verbs": ["get"]}]
    assert any("ClusterRole" in line for line in differences(kustomized, widened))
    fewer = [o for o in charted if o["kind"] != "PodDisruptionBudget"]
    assert differences(kustomized, fewer) == [
        f"only in kustomize: ('PodDisruptionBudget', '{NAMESPACE}', 'phalanx')"]


def test_monitoring_values_add_what_manifests_monitoring_adds(charted: list[Obj]) -> None:
    monitoring = render(MANIFESTS / "monitoring")
    base = keyed(charted)
    added = [o for o in render_chart(MONITORING) if key(o) not in base]
    assert sorted(key(o) for o in added) == sorted(key(o) for o in monitoring)
    # manifests/monitoring/ is applied after the base, which labels nothing in it: compare
    # without the chart's labels of every object (app.kubernetes.io/part-of and Helm's).
    for ours in added:
        theirs = keyed(monitoring)[key(ours)]
        if ours["kind"] == "ConfigMap":
            (name,) = theirs["data"]
            assert json.loads(ours["data"][name]) == json.loads(theirs["data"][name])
            assert theirs["metadata"]["labels"].items() <= ours["metadata"]["labels"].items()
        else:
            assert ours["spec"] == theirs["spec"]
            assert theirs["metadata"]["labels"].items() <= ours["metadata"]["labels"].items()


def test_crds_are_the_crds_folder(charted: list[Obj]) -> None:
    crds = {yaml.safe_load(p.read_text())["metadata"]["name"]: yaml.safe_load(p.read_text())
            for p in (REPO / "crds").glob("*.yaml")}
    rendered = {o["metadata"]["name"]: o for o in charted
                if o["kind"] == "CustomResourceDefinition"}
    assert rendered == crds


# -- values ------------------------------------------------------------------------------------


def test_settings_values_override_the_shipped_ones_and_roll_the_pods(
    charted: list[Obj], tmp_path: Path
) -> None:
    values = {"config.mode": "gate", "config.leader_election.lease_name": "other-lease",
              "config.metrics_port": "9100"}
    changed = render_chart(values)
    text = only(changed, "ConfigMap", CONFIG_MAP)["data"]["config.yaml"]
    (tmp_path / "config.yaml").write_text(text)
    settings = load_settings(tmp_path / "config.yaml", env={})
    assert (settings.mode, settings.leader_election.lease_name) == ("gate", "other-lease")
    # Untouched settings keep the shipped values.
    assert settings.preemption.eviction == "evict"
    assert settings.binding_concurrency == 384
    # What reads the settings follows them: the Role's lease, the ports.
    role = only(changed, "Role", "phalanx-leader-election")
    assert [r.get("resourceNames") for r in role["rules"]] == [None, ["other-lease"]]
    (operator,) = deployment(changed)["spec"]["template"]["spec"]["containers"]
    assert operator["ports"][0] == {"name": "metrics", "containerPort": 9100, "protocol": "TCP"}
    assert only(changed, "Service", "phalanx-metrics")["spec"]["ports"][0]["port"] == 9100

    def checksum(objects: list[Obj]) -> str:
        return str(deployment(objects)["spec"]["template"]["metadata"]["annotations"][
            CHECKSUM_ANNOTATION])

    assert checksum(changed) != checksum(charted)


def test_replicas_image_and_namespace_values(tmp_path: Path) -> None:
    objects = render_chart({"replicas": "3", "image.repository": "registry.example.com/phalanx",
                            "image.tag": "0.2.0", "namespace.name": "sched",
                            "namespace.create": "false"})
    assert deployment(objects)["spec"]["replicas"] == 3
    (operator,) = deployment(objects)["spec"]["template"]["spec"]["containers"]
    assert operator["image"] == "registry.example.com/phalanx:0.2.0"
    assert not [o for o in objects if o["kind"] == "Namespace"]
    namespaced = [o for o in objects if o["kind"] not in CLUSTER_SCOPED]
    assert {o["metadata"]["namespace"] for o in namespaced} == {"sched"}
    binding = only(objects, "ClusterRoleBinding", "phalanx")
    assert binding["subjects"][0]["namespace"] == "sched"
    # The webhooks call the Service there and leave that namespace out, as they leave out
    # phalanx-system by default.
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        configuration = only(objects, kind)
        assert configuration["metadata"]["annotations"] == {
            "cert-manager.io/inject-ca-from": "sched/phalanx-webhook"}
        for webhook in configuration["webhooks"]:
            assert webhook["clientConfig"]["service"]["namespace"] == "sched"
            (excluded,) = webhook["namespaceSelector"]["matchExpressions"]
            assert excluded["values"] == ["kube-system", "sched"]
    certificate = only(objects, "Certificate", "phalanx-webhook")
    assert certificate["spec"]["dnsNames"][0] == "phalanx-webhook.sched.svc"


# -- the webhooks' certificate -----------------------------------------------------------------


def test_a_provided_secret_replaces_cert_manager(kustomized: list[Obj]) -> None:
    """webhook.certificate=secret: the same objects as manifests/ without its cert-manager
    component, and the CA given is each webhook's caBundle."""
    objects = render_chart({"webhook.certificate": "secret", "webhook.caBundle": "Q0EK"})
    cert_manager = {"Issuer", "Certificate"}
    assert {key(o) for o in objects} == {
        key(o) for o in unhash_config_map(kustomized) if o["kind"] not in cert_manager}
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        configuration = only(objects, kind)
        assert "annotations" not in configuration["metadata"]
        assert {w["clientConfig"]["caBundle"] for w in configuration["webhooks"]} == {"Q0EK"}
    volumes = deployment(objects)["spec"]["template"]["spec"]["volumes"]
    assert {"name": "webhook-tls", "secret": {"secretName": "phalanx-webhook-tls"}} in volumes


def test_a_provided_secret_that_cannot_be_found_is_refused() -> None:
    """Without a cluster (helm template) or before the Secret exists, the chart cannot fill
    caBundle: it says what to create or give."""
    result = helm("template", "phalanx", str(CHART), "--set", "webhook.certificate=secret",
                  check=False)
    assert result.returncode != 0
    assert "Secret phalanx-webhook-tls (tls.crt, tls.key, ca.crt) was not found" in result.stderr


def test_webhooks_off_leave_no_trace(charted: list[Obj]) -> None:
    objects = render_chart({"webhook.enabled": "false"})
    removed = {key(o) for o in charted} - {key(o) for o in objects}
    assert {k[0] for k in removed} == {"Service", "MutatingWebhookConfiguration",
                                       "ValidatingWebhookConfiguration", "Issuer", "Certificate"}
    (operator,) = deployment(objects)["spec"]["template"]["spec"]["containers"]
    assert "webhook" not in json.dumps(operator).lower()
    assert [v["name"] for v in deployment(objects)["spec"]["template"]["spec"]["volumes"]] == [
        "config", "tmp"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"config.leader_election.enabled": "false"},
         "replicas need config.leader_election.enabled"),
        ({"config.mode": "sometimes"}, "mode"),
        ({"replicas": "-1"}, "replicas"),
        ({"replica": "3"}, "'replica' not allowed"),  # a misspelt value is not ignored
        ({"webhook.certificate": "self"}, "/webhook/certificate"),
        ({"serviceMonitor.enabled": "true", "metrics.service.enabled": "false"},
         "needs metrics.service.enabled"),
    ],
)
def test_bad_values_are_refused_naming_the_value(values: dict[str, str], message: str) -> None:
    args = [arg for k, v in values.items() for arg in ("--set", f"{k}={v}")]
    result = helm("template", "phalanx", str(CHART), *args, check=False)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr


def test_one_replica_may_run_without_leader_election() -> None:
    objects = render_chart({"replicas": "1", "config.leader_election.enabled": "false"})
    settings = config_data(only(objects, "ConfigMap", CONFIG_MAP))["config.yaml"]
    assert isinstance(settings, dict) and settings["leader_election"]["enabled"] is False
