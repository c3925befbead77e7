"""Pods the webhook missed (webhooks/missed.py), the namespace default queue of the
workload gangs (operator/workload_gangs.py), and the self-signed certificate
(webhooks/certificate.py)."""

from __future__ import annotations

import ipaddress
from typing import Any

from cryptography import x509

from phalanx.operator.cache import ClusterCache
from phalanx.operator.workload_gangs import with_default_queue
from phalanx.webhooks.certificate import self_signed
from phalanx.webhooks.missed import group_message, missed_pods, pod_message

MANAGED = {"app.kubernetes.io/managed-by": "phalanx"}


def group(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"kind": "PodGroup", "metadata": {"name": name, "namespace": "ml",
                                             "labels": labels or {}}}


def pod(name: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ml", "labels": labels},
            "spec": {"schedulerName": "default-scheduler", **spec},
            "status": {"phase": "Pending"}}


GROUPS = {"ml/job-train": group("job-train", MANAGED), "ml/own": group("own"),
          "ml/job-user": group("job-user")}
JOB = {"batch.kubernetes.io/job-name": "train"}


def test_waiting_pods_of_managed_gangs_for_kube_scheduler_are_found() -> None:
    pods = [pod("a", JOB), pod("b", {"scheduling.phalanx.io/pod-group": "own"})]
    found = missed_pods(pods, GROUPS)
    assert [(m.pod["metadata"]["name"], m.group["metadata"]["name"]) for m in found] == [
        ("a", "job-train"), ("b", "own")]


def test_pods_sent_to_phalanx_placed_or_outside_a_managed_gang_are_not() -> None:
    pods = [
        pod("ours", JOB, schedulerName="phalanx"),
        pod("gated", JOB, schedulingGates=[{"name": "scheduling.phalanx.io/gang"}]),
        pod("placed", JOB, nodeName="n1"),
        pod("volcano", JOB, schedulerName="volcano"),
        pod("no-gang", {"batch.kubernetes.io/job-name": "other"}),
        # A PodGroup a user named after a Job is not that Job's gang.
        pod("user", {"batch.kubernetes.io/job-name": "user"}),
    ]
    running = pod("running", JOB)
    running["status"]["phase"] = "Running"
    system = pod("system", JOB)
    system["metadata"]["namespace"] = "kube-system"
    assert missed_pods([*pods, running, system], {**GROUPS, "kube-system/job-train": group(
        "job-train", MANAGED)}) == []


def test_the_messages_say_what_happened_and_what_to_do() -> None:
    text = pod_message(group("job-train"))
    assert "belongs to gang job-train" in text and "phalanx-mutating" in text
    assert "kube-scheduler places it alone" in text and "delete it" in text
    many = group_message([pod(f"p{i}", JOB) for i in range(5)])
    assert many.startswith("5 pod(s) of this gang (p0, p1, p2 and 2 more)")


def test_a_workload_takes_its_namespace_s_default_queue_unless_it_has_one() -> None:
    cache = ClusterCache.from_objects([
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "ml", "labels": {"scheduling.phalanx.io/default-queue": "team-a"}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}},
    ])
    job = {"kind": "Job", "metadata": {"name": "j", "namespace": "ml"}}
    assert with_default_queue(job, cache)["metadata"]["labels"] == {
        "scheduling.phalanx.io/queue": "team-a"}
    own = {"kind": "Job", "metadata": {"name": "j", "namespace": "ml",
                                       "labels": {"scheduling.phalanx.io/queue": "team-b"}}}
    assert with_default_queue(own, cache) is own
    elsewhere = {"kind": "Job", "metadata": {"name": "j", "namespace": "other"}}
    assert with_default_queue(elsewhere, cache) is elsewhere


def test_the_self_signed_certificate_names_the_hosts_it_is_called_by() -> None:
    cert_pem, key_pem = self_signed(["127.0.0.1", "0.0.0.0", "phalanx.local", "127.0.0.1"])
    cert = x509.load_pem_x509_certificate(cert_pem)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["phalanx.local"]
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert cert.issuer == cert.subject  # its own CA: the caBundle is the certificate
    assert b"PRIVATE KEY" in key_pem
