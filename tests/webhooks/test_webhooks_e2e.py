"""The admission webhooks on the real control plane: kube-apiserver calls the operator's
Kopf webhook server over TLS (its self-signed certificate, registered on loopback).

Workloads here are written for kube-scheduler (no schedulerName, no gate) and carry only
the queue label: the webhook sends their pods to Phalanx, which runs each as one gang.
"""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from operator_thread import operator_in_thread
from phalanx.cluster import LocalCluster
from phalanx.cluster.workload_controllers import Running
from phalanx.config import Settings
from phalanx.config.settings import Mode, Webhook
from phalanx.operator.kube.client import load_configuration
from phalanx.operator.main import Operator
from phalanx.webhooks.certificate import self_signed
from phalanx.webhooks.configurations import configurations
from phalanx.webhooks.names import MUTATING_CONFIGURATION, VALIDATING_CONFIGURATION
from polling import eventually, get_json

pytestmark = pytest.mark.e2e

QUEUE = {"scheduling.phalanx.io/queue": "default"}
GATE = "scheduling.phalanx.io/gang"
GPU_POD = {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "8"},
           "limits": {"nvidia.com/gpu": "8"}}
REGISTRATIONS = ("mutatingwebhookconfiguration/" + MUTATING_CONFIGURATION,
                 "validatingwebhookconfiguration/" + VALIDATING_CONFIGURATION)


def webhook_settings(mode: Mode = Mode.BINDER, **webhook: Any) -> Settings:
    return Settings(
        mode=mode, debounce_seconds=0.1, max_delay_seconds=0.5, cycle_period_seconds=1.0,
        discovery_period_seconds=1.0,
        webhook=Webhook(enabled=True, register_configurations=True, host="127.0.0.1", port=0,
                        **webhook),
    )


@contextlib.contextmanager
def webhooked(cluster: LocalCluster, settings: Settings) -> Iterator[Operator]:
    """The operator serving its webhooks, registered; unregistered after, by the operator
    itself (a validating webhook with failurePolicy Fail left behind would refuse every
    later PodGroup of the session)."""
    async def make() -> Operator:
        return Operator(await load_configuration(str(cluster.kubeconfig)), settings)

    try:
        with operator_in_thread(make, "phalanx-webhooks") as operator:
            assert eventually(registered(cluster), 30), "webhook configurations not registered"
            yield operator
        # The operator removed what it registered as it stopped.
        left = cluster.kubectl("get", *REGISTRATIONS, "--ignore-not-found", "-o", "name")
        assert left.stdout.strip() == ""
    finally:
        cluster.kubectl("delete", "--ignore-not-found", *REGISTRATIONS)


def registered(cluster: LocalCluster) -> Any:
    def check() -> bool:
        found = cluster.kubectl("get", *REGISTRATIONS, "-o", "json", check=False)
        return found.returncode == 0 and found.stdout.count('"url"') == 3

    return check


@pytest.fixture
def binder(cluster: LocalCluster) -> Iterator[Operator]:
    with webhooked(cluster, webhook_settings(Mode.BINDER)) as operator:
        yield operator


def template(**spec: Any) -> dict[str, Any]:
    """A pod template written for kube-scheduler: no schedulerName, no gate."""
    return {"spec": {"restartPolicy": "Never", **spec, "containers": [
        {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": GPU_POD}]}}


def job(name: str, parallelism: int, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": QUEUE if labels is None else labels,
                         "annotations": {"scheduling.phalanx.io/topology-required": "rack"}},
            "spec": {"parallelism": parallelism, "completions": parallelism, "backoffLimit": 0,
                     "template": template()}}


def pods(cluster: LocalCluster, namespace: str, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = get_json(cluster, "pods", "-n", namespace, "-l",
                                           selector)["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def runs_whole(cluster: LocalCluster, namespace: str, selector: str, count: int) -> list[str]:
    """All `count` pods bound, inside one rack."""
    def nodes() -> list[str]:
        found = [p["spec"].get("nodeName") for p in pods(cluster, namespace, selector)]
        return sorted(n for n in found if n) if len(found) == count else []

    placed = eventually(lambda: len(nodes()) == count and nodes(), 120)
    assert placed, pods(cluster, namespace, selector)
    racks = {get_json(cluster, "node", n)["metadata"]["labels"]["network.topology.nvidia.com/leaf"]
             for n in placed}
    assert len(racks) == 1, placed
    return list(placed)


def group(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    """The PodGroup, or {} while it does not exist."""
    found = cluster.kubectl("get", "pg", name, "-n", namespace, "-o", "json", check=False)
    return json.loads(found.stdout) if found.returncode == 0 else {}


def events(cluster: LocalCluster, namespace: str, reason: str) -> list[dict[str, Any]]:
    items = get_json(cluster, "events", "-n", namespace)["items"]
    return [e for e in items if e["reason"] == reason]


# -- the pod webhook ---------------------------------------------------------------------


def test_a_job_written_for_kube_scheduler_with_a_queue_label_runs_as_one_gang_binder_mode(
    cluster: LocalCluster, namespace: str, binder: Operator
) -> None:
    cluster.apply([job("train", 4)], namespace=namespace)
    selector = "batch.kubernetes.io/job-name=train"
    runs_whole(cluster, namespace, selector, 4)
    assert {p["spec"]["schedulerName"] for p in pods(cluster, namespace, selector)} == {"phalanx"}
    assert group(cluster, namespace, "job-train")["spec"]["minMember"] == 4
    # No more than the gang: a 5-pod Job of 40 GPUs needs more than a rack and none starts.
    cluster.apply([job("wide", 5)], namespace=namespace)
    wide = "batch.kubernetes.io/job-name=wide"
    assert eventually(lambda: len(pods(cluster, namespace, wide)) == 5)
    def unschedulable() -> bool:
        conditions = (group(cluster, namespace, "job-wide").get("status") or {}).get(
            "conditions") or []
        return any(c["type"] == "Unschedulable" and c["status"] == "True" for c in conditions)

    assert eventually(unschedulable, 60), group(cluster, namespace, "job-wide")
    assert [p for p in pods(cluster, namespace, wide) if p["spec"].get("nodeName")] == []


def test_a_job_with_a_queue_label_runs_as_one_gang_in_gate_mode(
    cluster: LocalCluster, namespace: str, kube_scheduler: int
) -> None:
    with webhooked(cluster, webhook_settings(Mode.GATE)):
        cluster.apply([job("gated", 3)], namespace=namespace)
        selector = "batch.kubernetes.io/job-name=gated"
        assert eventually(lambda: len(pods(cluster, namespace, selector)) == 3)
        nodes = runs_whole(cluster, namespace, selector, 3)  # kube-scheduler bound them
        assert len(set(nodes)) == 3
        for pod in pods(cluster, namespace, selector):
            assert pod["spec"]["schedulerName"] == "default-scheduler"
            assert not pod["spec"].get("schedulingGates")  # removed by Phalanx


def test_a_jobset_and_a_pytorchjob_with_only_a_queue_label_run_as_gangs(
    cluster: LocalCluster, namespace: str, jobset_controller: Running,
    training_operator: Running, binder: Operator,
) -> None:
    def replicated(name: str, replicas: int, count: int) -> dict[str, Any]:
        spec = {"parallelism": count, "completions": count, "backoffLimit": 0,
                "template": template()}
        return {"name": name, "replicas": replicas, "template": {"spec": spec}}

    def replica(count: int) -> dict[str, Any]:
        pod = template()
        pod["spec"]["containers"][0]["name"] = "pytorch"  # the container it configures
        pod["spec"].pop("restartPolicy")
        return {"replicas": count, "restartPolicy": "Never", "template": pod}

    cluster.apply([
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
         "metadata": {"name": "js", "labels": QUEUE},
         "spec": {"replicatedJobs": [replicated("driver", 1, 1), replicated("workers", 1, 2)]}},
        {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
         "metadata": {"name": "pt", "labels": QUEUE},
         "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(2)}}},
    ], namespace=namespace)
    for selector, name in (("jobset.sigs.k8s.io/jobset-name=js", "jobset-js"),
                           ("training.kubeflow.org/job-name=pt", "pytorchjob-pt")):
        runs_whole(cluster, namespace, selector, 3)
        assert {p["spec"]["schedulerName"] for p in pods(cluster, namespace, selector)} == {
            "phalanx"}
        assert group(cluster, namespace, name)["spec"]["minMember"] == 3


def test_other_pods_are_left_as_they_are(
    cluster: LocalCluster, namespace: str, binder: Operator
) -> None:
    other = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "other", "labels": QUEUE},
             "spec": {**template()["spec"], "schedulerName": "volcano"}}
    plain = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"},
             "spec": template()["spec"]}
    cluster.apply([other, plain, job("unlabelled", 1, labels={})], namespace=namespace)
    assert get_json(cluster, "pod", "other", "-n", namespace)["spec"]["schedulerName"] == "volcano"
    assert get_json(cluster, "pod", "plain", "-n", namespace)["spec"]["schedulerName"] == (
        "default-scheduler")
    selector = "batch.kubernetes.io/job-name=unlabelled"
    assert eventually(lambda: pods(cluster, namespace, selector))
    [pod] = pods(cluster, namespace, selector)
    assert pod["spec"]["schedulerName"] == "default-scheduler"
    assert not pod["spec"].get("schedulingGates")


def test_a_namespace_default_queue_makes_its_unlabelled_jobs_gangs(
    cluster: LocalCluster, binder: Operator
) -> None:
    name = f"t-{secrets.token_hex(4)}"
    cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": name, "labels": {"scheduling.phalanx.io/default-queue": "default"}}}])
    try:
        cluster.apply([job("team", 2, labels={})], namespace=name)
        selector = "batch.kubernetes.io/job-name=team"
        runs_whole(cluster, name, selector, 2)
        assert group(cluster, name, "job-team")["spec"]["queue"] == "default"
    finally:
        cluster.kubectl("delete", "namespace", name, "--wait=false")


def test_with_the_webhook_down_pods_are_created_and_the_operator_says_why(
    cluster: LocalCluster, namespace: str
) -> None:
    # The configurations as the operator registers them, pointed at a port nobody serves.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    ca, _ = self_signed(["127.0.0.1"])
    bundle = base64.b64encode(ca).decode()
    cluster.apply(configurations(
        lambda path: {"url": f"https://127.0.0.1:{dead}/{path}", "caBundle": bundle}))
    try:
        cluster.apply([job("orphan", 2)], namespace=namespace)
        selector = "batch.kubernetes.io/job-name=orphan"
        created = eventually(lambda: len(pods(cluster, namespace, selector)) == 2, 60)
        assert created, "pod creation was blocked by the unreachable webhook"
        assert {p["spec"]["schedulerName"] for p in pods(cluster, namespace, selector)} == {
            "default-scheduler"}
        refused = cluster.apply([{
            "apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "while-down"}, "spec": {"minMember": 1}}],
            namespace=namespace, check=False)
        assert refused.returncode != 0 and "podgroups.scheduling.phalanx.io" in refused.stderr
    finally:
        cluster.kubectl("delete", "--ignore-not-found", *REGISTRATIONS)
    with webhooked(cluster, webhook_settings(Mode.BINDER)):
        def said() -> list[dict[str, Any]]:
            return events(cluster, namespace, "WebhookMissed")

        found = eventually(lambda: len({e["involvedObject"]["kind"] for e in said()}) == 2, 60)
        assert found, said()
        on_group = [e for e in said() if e["involvedObject"]["kind"] == "PodGroup"]
        assert on_group[0]["involvedObject"]["name"] == "job-orphan"
        assert "2 pod(s) of this gang" in on_group[0]["message"]
        assert "kube-scheduler places them one by one" in on_group[0]["message"]


# -- the validating webhook --------------------------------------------------------------


def podgroup(name: str, queue: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name}, "spec": {"minMember": 1, "queue": queue}}


def queue(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "Queue",
            "metadata": {"name": name}, "spec": spec}


def test_bad_podgroups_and_queues_are_refused_with_the_field_named(
    cluster: LocalCluster, namespace: str, binder: Operator
) -> None:
    tag = secrets.token_hex(3)
    refused = cluster.apply([podgroup("typo", f"team-{tag}")], namespace=namespace, check=False)
    assert refused.returncode != 0
    assert f"spec.queue: queue team-{tag} does not exist" in refused.stderr
    # A workload's PodGroup is refused the same way; the workload says so, its pods wait.
    cluster.apply([job("typo", 2, labels={"scheduling.phalanx.io/queue": f"team-{tag}"})],
                  namespace=namespace)
    said = eventually(lambda: [e for e in events(cluster, namespace, "PodGroupRefused")
                               if e["involvedObject"]["kind"] == "Job"], 60)
    assert said and f"spec.queue: queue team-{tag} does not exist" in said[0]["message"]
    selector = "batch.kubernetes.io/job-name=typo"
    assert eventually(lambda: len(pods(cluster, namespace, selector)) == 2)
    assert [p["spec"].get("nodeName") for p in pods(cluster, namespace, selector)] == [None] * 2

    top, child = f"top-{tag}", f"child-{tag}"
    cluster.apply([queue(top, capability={"nvidia.com/gpu": 16}),
                   queue(child, parent=top, guarantee={"nvidia.com/gpu": 8})])
    try:
        too_much = cluster.apply([queue(f"greedy-{tag}", parent=top,
                                        guarantee={"nvidia.com/gpu": 12})], check=False)
        assert too_much.returncode != 0
        assert "spec.guarantee: the children of queue " + top in too_much.stderr
        assert "above its capability of 16 GPUs" in too_much.stderr
        shrink = cluster.apply([queue(top, capability={"nvidia.com/gpu": 4})], check=False)
        assert shrink.returncode != 0 and "spec.capability: 4 GPUs" in shrink.stderr
        loop = cluster.apply([queue(top, parent=child, capability={"nvidia.com/gpu": 16})],
                             check=False)
        assert loop.returncode != 0
        assert f"spec.parent: {child} makes a cycle of parents ({top} -> {child} -> {top})" in (
            loop.stderr)
        cluster.apply([podgroup("known", child)], namespace=namespace)  # a good one passes
    finally:
        cluster.kubectl("delete", "queue", child, top, "--ignore-not-found")


def test_unknown_queues_may_be_allowed_with_a_warning(
    cluster: LocalCluster, namespace: str
) -> None:
    with webhooked(cluster, webhook_settings(allow_unknown_queues=True)):
        tag = secrets.token_hex(3)
        result = cluster.apply([podgroup("early", f"later-{tag}")], namespace=namespace)
        assert f"Warning: spec.queue: queue later-{tag} does not exist (yet)" in result.stderr


def test_a_certificate_from_a_folder_is_served_as_the_mounted_secret_would_be(
    cluster: LocalCluster, namespace: str, tmp_path: Path
) -> None:
    # The Secret phalanx-webhook-tls as the Deployment mounts it: tls.crt, tls.key, ca.crt.
    cert, key = self_signed(["127.0.0.1"])
    for name, data in (("tls.crt", cert), ("tls.key", key), ("ca.crt", cert)):
        (tmp_path / name).write_bytes(data)
    with webhooked(cluster, webhook_settings(cert_dir=str(tmp_path))):
        mutating = get_json(cluster, "mutatingwebhookconfiguration", MUTATING_CONFIGURATION)
        bundle = mutating["webhooks"][0]["clientConfig"]["caBundle"]
        assert base64.b64decode(bundle) == cert  # the CA is the folder's ca.crt
        refused = cluster.apply([podgroup("typo", "no-such-queue")], namespace=namespace,
                                check=False)
        assert "spec.queue: queue no-such-queue does not exist" in refused.stderr  # TLS works
