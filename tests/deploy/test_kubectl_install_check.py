"""`kubectl phalanx install-check`: the findings each kind of fact gives, without a cluster
(the e2e test reads the same facts from the real control plane)."""

from __future__ import annotations

import base64
import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from phalanx import __version__
from phalanx.cluster.local import CRD_DIR
from phalanx.cluster.pki import write_loopback_serving
from phalanx.kubectl.checks import Check, Status
from phalanx.kubectl.install_check import (
    InstallFacts,
    crd_checks,
    failed,
    format_report,
    install_report,
    leader_check,
    workload_checks,
)
from phalanx.kubectl.install_facts import expected_crds
from phalanx.kubectl.node_check import node_checks, topology_checks
from phalanx.kubectl.webhook_check import (
    ApiCall,
    Endpoint,
    WebhookConfiguration,
    webhook_checks,
)
from phalanx.leader.record import lease_body, parse_lease
from phalanx.webhooks.names import MUTATING_CONFIGURATION as MUTATING
from phalanx.webhooks.names import VALIDATING_CONFIGURATION as VALIDATING

from .objects import Obj, node, topology

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def established(crd: Obj) -> Obj:
    installed = copy.deepcopy(crd)
    installed["status"] = {"conditions": [{"type": "Established", "status": "True"}]}
    return installed


def by_subject(checks: list[Check]) -> dict[str, Check]:
    return {check.subject: check for check in checks}


# CRDs


def test_the_shipped_crds_installed_as_shipped_are_ok() -> None:
    shipped = expected_crds(CRD_DIR)
    assert {crd["metadata"]["name"] for crd in shipped} == {
        "podgroups.scheduling.phalanx.io", "queues.scheduling.phalanx.io",
        "networktopologies.scheduling.phalanx.io"}
    checks = crd_checks(shipped, {crd["metadata"]["name"]: established(crd) for crd in shipped})
    assert [c.status for c in checks] == [Status.OK] * 3
    assert all(c.detail == "v1alpha1 served storage" for c in checks)


def test_a_missing_crd_an_unserved_version_and_an_older_schema_are_named() -> None:
    topologies, podgroups, queues = sorted(expected_crds(CRD_DIR),
                                           key=lambda crd: crd["metadata"]["name"])
    old_queues = established(queues)
    del old_queues["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"]["fairSharing"]
    unserved = established(podgroups)
    unserved["spec"]["versions"][0]["served"] = False
    checks = by_subject(crd_checks([podgroups, queues, topologies], {
        "podgroups.scheduling.phalanx.io": unserved,
        "queues.scheduling.phalanx.io": old_queues,
    }))
    assert checks["networktopologies.scheduling.phalanx.io"].status is Status.FAIL
    assert "not installed" in checks["networktopologies.scheduling.phalanx.io"].detail
    assert checks["podgroups.scheduling.phalanx.io"].status is Status.FAIL
    assert "v1alpha1 served is False" in checks["podgroups.scheduling.phalanx.io"].detail
    assert checks["queues.scheduling.phalanx.io"].status is Status.WARN
    assert "v1alpha1 schema differs" in checks["queues.scheduling.phalanx.io"].detail


def test_a_crd_not_established_fails() -> None:
    crd = expected_crds(CRD_DIR)[0]
    (check,) = crd_checks([crd], {crd["metadata"]["name"]: crd})
    assert check.status is Status.FAIL
    assert check.detail.endswith("not Established")


# webhooks


def bundle(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def configuration(name: str, ca_bundle: str, policy: str, annotations: Obj | None = None) -> Obj:
    client = {"url": "https://127.0.0.1:9443/validate-queues"}
    if ca_bundle:
        client["caBundle"] = ca_bundle
    return {"metadata": {"name": name, "annotations": annotations or {}},
            "webhooks": [{"name": "queues.scheduling.phalanx.io", "failurePolicy": policy,
                          "clientConfig": client}]}


def served(path: Path) -> Endpoint:
    return Endpoint("https://127.0.0.1:9443/validate-queues", "127.0.0.1",
                    path.read_bytes(), seen_at="127.0.0.1:9443")


HOOK = "queues.scheduling.phalanx.io"


def test_a_healthy_webhook_shows_its_certificate_and_the_api_servers_call(
    tmp_path: Path,
) -> None:
    pair = write_loopback_serving(tmp_path, "webhook", not_after=NOW + timedelta(days=100))
    config = WebhookConfiguration(VALIDATING, configuration(VALIDATING, bundle(pair.ca_cert),
                                                            "Fail"),
                                  {HOOK: served(pair.cert)}, ApiCall(0, "queue/x created"))
    hook, call = webhook_checks([config], NOW)
    assert hook.status is Status.OK
    assert hook.subject == f"{VALIDATING}/{HOOK}"
    assert hook.detail == (
        "https://127.0.0.1:9443/validate-queues (failurePolicy Fail): certificate CN=webhook "
        "trusted by the caBundle, for 127.0.0.1, valid 100 more days (2027-03-15) "
        "(from 127.0.0.1:9443)")
    assert (call.status, call.detail) == (Status.OK, "a dry-run Queue was admitted through it")


def test_an_expired_certificate_fails_and_the_api_servers_refusal_is_quoted(
    tmp_path: Path,
) -> None:
    pair = write_loopback_serving(tmp_path, "webhook", not_after=NOW - timedelta(days=2))
    refusal = ('Error from server (InternalError): error when creating "q.json": Internal '
               'error occurred: failed calling webhook "queues.scheduling.phalanx.io": '
               "tls: failed to verify certificate: x509: certificate has expired")
    config = WebhookConfiguration(VALIDATING, configuration(VALIDATING, bundle(pair.ca_cert),
                                                            "Fail"),
                                  {HOOK: served(pair.cert)}, ApiCall(1, refusal))
    hook, call = webhook_checks([config], NOW)
    assert hook.status is Status.FAIL
    assert "certificate expired 2 days ago" in hook.detail
    assert call.status is Status.FAIL
    assert call.detail == ('failed calling webhook "queues.scheduling.phalanx.io": tls: failed '
                           "to verify certificate: x509: certificate has expired")


def test_a_certificate_expiring_soon_warns_with_the_days_left(tmp_path: Path) -> None:
    pair = write_loopback_serving(tmp_path, "webhook", not_after=NOW + timedelta(days=3))
    config = WebhookConfiguration(MUTATING, configuration(MUTATING, bundle(pair.ca_cert),
                                                          "Ignore"), {HOOK: served(pair.cert)})
    (hook,) = webhook_checks([config], NOW)
    assert hook.status is Status.WARN
    assert "expires in 3.0 days (2026-12-08)" in hook.detail
    (hook,) = webhook_checks([config], NOW, warn_days=2)
    assert hook.status is Status.OK


def test_no_ca_bundle_names_the_certificate_cert_manager_should_inject(tmp_path: Path) -> None:
    pair = write_loopback_serving(tmp_path, "webhook")
    annotations = {"cert-manager.io/inject-ca-from": "phalanx-system/phalanx-webhook"}
    config = WebhookConfiguration(MUTATING, configuration(MUTATING, "", "Ignore", annotations),
                                  {HOOK: served(pair.cert)})
    (hook,) = webhook_checks([config], NOW)
    assert hook.status is Status.FAIL
    assert ("no caBundle (cert-manager's CA injector has not filled it from Certificate "
            "phalanx-system/phalanx-webhook)") in hook.detail


def test_an_unreachable_endpoint_fails_and_an_unseen_certificate_warns() -> None:
    config = WebhookConfiguration(MUTATING, configuration(MUTATING, "Zm9v", "Ignore"), {
        HOOK: Endpoint("service phalanx-system/phalanx-webhook:443/mutate-pods",
                       "phalanx-webhook.phalanx-system.svc",
                       unreachable="Service phalanx-system/phalanx-webhook has no ready endpoint",
                       unseen="Secret phalanx-system/phalanx-webhook-tls: Forbidden")})
    (hook,) = webhook_checks([config], NOW)
    assert hook.status is Status.FAIL
    assert "unreachable: Service phalanx-system/phalanx-webhook has no ready endpoint" in (
        hook.detail)
    assert "certificate not checked: Secret phalanx-system/phalanx-webhook-tls: Forbidden" in (
        hook.detail)


@pytest.mark.parametrize(("call", "policy", "status", "words"), [
    (ApiCall(1, 'admission webhook "q" denied the request: spec.parent: a cycle'), "Fail",
     Status.OK, "it answered"),
    (ApiCall(0, "queue/x created (server dry run)"), "Ignore", Status.WARN,
     "failurePolicy Ignore admits it too"),
    (ApiCall(1, 'error: the server could not find the requested resource'), "Fail",
     Status.WARN, "could not be tried"),
])
def test_the_api_servers_answer_is_read_for_what_it_proves(
    tmp_path: Path, call: ApiCall, policy: str, status: Status, words: str
) -> None:
    pair = write_loopback_serving(tmp_path, "webhook")
    config = WebhookConfiguration(VALIDATING, configuration(VALIDATING, bundle(pair.ca_cert),
                                                            policy),
                                  {HOOK: served(pair.cert)}, call)
    _, check = webhook_checks([config], datetime.now(UTC))
    assert check.status is status
    assert words in check.detail


def test_webhooks_not_installed_warn_with_what_is_missing() -> None:
    checks = webhook_checks([WebhookConfiguration(MUTATING, None),
                             WebhookConfiguration(VALIDATING, None)], NOW)
    assert [(c.subject, c.status) for c in checks] == [(MUTATING, Status.WARN),
                                                       (VALIDATING, Status.WARN)]
    assert "pods must name schedulerName phalanx" in checks[0].detail


# the operator's leader


def lease(holder: str, renewed: datetime) -> dict[str, Any]:
    return lease_body("phalanx-leader", "phalanx-system", holder, 5, 0,
                      acquire_time="", renew_time=renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))


def test_the_lease_records_the_version_of_the_operator_that_wrote_it() -> None:
    assert parse_lease(lease("op-1", NOW)).operator_version == __version__


def test_a_fresh_lease_names_the_leader_and_its_version() -> None:
    check = leader_check("phalanx-system/phalanx-leader", lease("op-1", NOW - timedelta(seconds=2)),
                         __version__, NOW)
    assert check.status is Status.OK
    assert check.detail == f"leader op-1, version {__version__}; renewed 2 s ago (lease 5 s)"


def test_a_stale_lease_and_no_lease_fail() -> None:
    stale = leader_check("ns/l", lease("op-1", NOW - timedelta(seconds=60)), __version__, NOW)
    assert stale.status is Status.FAIL
    assert "renewed 60 s ago (lease 5 s): it stopped renewing" in stale.detail
    missing = leader_check("ns/l", None, __version__, NOW)
    assert missing.status is Status.FAIL
    assert missing.detail.startswith("not found: no operator runs with leader election")


def test_another_version_or_none_recorded_warns() -> None:
    other = leader_check("ns/l", lease("op-1", NOW), "9.9.9", NOW)
    assert other.status is Status.WARN
    assert other.detail.endswith("this plugin is 9.9.9")
    old = lease("op-1", NOW)
    del old["metadata"]["annotations"]
    unrecorded = leader_check("ns/l", old, __version__, NOW)
    assert unrecorded.status is Status.WARN
    assert "version not recorded" in unrecorded.detail


# workload kinds


def test_workload_kinds_served_missing_or_at_another_version() -> None:
    checks = by_subject(workload_checks(
        {"batch/v1": frozenset({"jobs", "cronjobs"})},
        {"batch": ("v1",), "jobset.x-k8s.io": ("v1alpha1",)},
    ))
    assert checks["Job (batch/v1)"].status is Status.OK
    assert checks["JobSet (jobset.x-k8s.io/v1alpha2)"].status is Status.WARN
    assert "served at v1alpha1 only: Phalanx reads v1alpha2" in (
        checks["JobSet (jobset.x-k8s.io/v1alpha2)"].detail)
    assert checks["PyTorchJob (kubeflow.org/v1)"].status is Status.NOTE


# nodes and topology levels


def test_nodes_without_gpus_are_listed() -> None:
    cpu = node("cpu-0", "r0", gpus=0)
    checks, parsed = node_checks([node("gpu-0", "r0"), node("gpu-1", "r0"), cpu])
    assert [(c.subject, c.status) for c in checks] == [
        ("nvidia.com/gpu", Status.OK), ("without nvidia.com/gpu", Status.NOTE)]
    assert checks[0].detail == "2 nodes, 16 GPUs"
    assert checks[1].detail.startswith("1 nodes (cpu-0)")
    assert len(parsed) == 3


def test_a_level_no_node_carries_fails_and_gpu_nodes_without_a_level_label_warn() -> None:
    unlabelled = node("gpu-9", "r1")
    del unlabelled["metadata"]["labels"]["example.com/rack"]
    _, nodes = node_checks([node("gpu-0", "r0"), node("gpu-1", "r1"), unlabelled])
    typo = topology("typo")
    typo["spec"]["levels"][0]["nodeLabels"] = ["example.com/rakc"]
    checks = by_subject(topology_checks([topology(), typo], nodes))
    assert checks["default/rack"].status is Status.WARN
    assert checks["default/rack"].detail == (
        "1 of 3 GPU nodes carry none of example.com/rack (gpu-9): gangs requiring rack never "
        "use them")
    assert (checks["default/host"].status, checks["default/host"].detail) == (
        Status.OK, "3 domains by kubernetes.io/hostname")
    assert checks["typo/rack"].status is Status.FAIL
    assert checks["typo/rack"].detail == (
        "no node carries example.com/rakc: no gang requiring rack fits")


def test_an_invalid_topology_fails_with_the_parsers_message() -> None:
    bad = topology("bad")
    bad["spec"]["levels"] = []
    (check,) = topology_checks([bad], [])
    assert check.status is Status.FAIL
    assert "spec.levels" in check.detail


# the whole report


def test_the_report_fails_only_on_a_failure_and_says_so_last() -> None:
    facts = InstallFacts(
        expected_crds=[], crds={}, webhooks=[], lease_name="ns/l", lease=lease("op-1", NOW),
        served={}, group_versions={}, nodes=[node("gpu-0", "r0")], topologies=[topology()],
    )
    checks = install_report(facts, NOW)
    assert not failed(checks)
    text = format_report(checks)
    assert text.splitlines()[-1].startswith("healthy: 0 failed")
    assert "  ok    Lease ns/l: leader op-1" in text
    broken = install_report(InstallFacts(
        expected_crds=[], crds={}, webhooks=[], lease_name="ns/l", lease=None,
        served={}, group_versions={}), NOW)
    assert failed(broken)
    assert format_report(broken).splitlines()[-1].startswith("unhealthy: 1 failed")


def test_reads_refused_are_findings_of_their_area_not_guesses() -> None:
    """A user who may not read Leases or nodes gets that said, not "no leader" or "no GPU"."""
    facts = InstallFacts(
        expected_crds=[], crds=None, webhooks=[], lease_name="ns/l", lease=None,
        lease_read=False, served={}, group_versions={}, nodes=None, topologies=[topology()],
        unreadable=[("operator", "leases is forbidden"), ("nodes", "nodes is forbidden"),
                    ("CRDs", "customresourcedefinitions is forbidden")],
    )
    checks = install_report(facts, NOW)
    assert [(c.area, c.detail) for c in checks if c.subject == "read"] == [
        ("CRDs", "cannot read: customresourcedefinitions is forbidden"),
        ("operator", "cannot read: leases is forbidden"),
        ("nodes", "cannot read: nodes is forbidden"),
    ]
    assert not any("Lease" in c.subject or c.subject == "nvidia.com/gpu" for c in checks)
    areas = [c.area for c in checks]
    assert areas == sorted(areas, key=["CRDs", "webhook", "operator", "workloads", "nodes",
                                       "topology"].index)
