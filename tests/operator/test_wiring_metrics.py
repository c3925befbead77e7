"""The scheduler feeds the metrics and binds cycle/group/queue into its JSON log lines."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s
from operator_fakes import QUEUE, TOPOLOGY, FakeApi, node, pod, podgroup, settled_cycle
from prometheus_client import CollectorRegistry
from test_scheduler import echo_writes, pods_start_running

from phalanx.config import Settings
from phalanx.observe import Metrics
from phalanx.observe.logging import configure_logging
from phalanx.operator.cache import ClusterCache
from phalanx.operator.gang_writes import failure_label
from phalanx.operator.kube.client import KubeApi
from phalanx.operator.scheduler import Scheduler

NOW = 1_000_000.0
CREATED = "1970-01-12T13:46:00Z"  # NOW - 40 s
TEAM = {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "Queue",
        "metadata": {"name": "team"}, "spec": {}}


def gpu_pod(name: str, gpus: int, **kw: Any) -> dict[str, Any]:
    body = pod(name, **kw)
    body["spec"]["containers"] = [
        {"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}]
    return body


def group(name: str, min_member: int, queue: str = "default") -> dict[str, Any]:
    body = podgroup(name, min_member=min_member, queue=queue)
    body["metadata"]["creationTimestamp"] = CREATED
    return body


def objects() -> list[dict[str, Any]]:
    """Four 8-GPU nodes (32 GPUs); 2 x 8 (`a`) and 1 x 4 (`half`) fit, then 3 x 8 (`big`)
    does not."""
    return [node("n0", "r0"), node("n1", "r0"), node("n2", "r1"), node("n3", "r1"),
            TOPOLOGY, QUEUE, TEAM,
            group("a", 2), gpu_pod("a-0", 8, group="a"), gpu_pod("a-1", 8, group="a"),
            group("half", 1, queue="team"), gpu_pod("half-0", 4, group="half"),
            group("big", 3, queue="team"),
            *(gpu_pod(f"big-{i}", 8, group="big") for i in range(3))]


def sample(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


@pytest.fixture
def json_logs() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging("INFO", "json", stream)
    yield stream
    logging.getLogger().handlers = []


def records(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


async def test_a_cycle_reports_bindings_gpus_phases_and_time_to_running(
    json_logs: io.StringIO,
) -> None:
    metrics = Metrics(CollectorRegistry())
    api = FakeApi()
    cluster = objects()
    scheduler = Scheduler(ClusterCache.from_objects(cluster), api, Settings(),
                          clock=lambda: NOW, metrics=metrics)
    result = await settled_cycle(scheduler)

    placed = {b.group for b in result.bindings}
    assert placed == {"ns/a", "ns/half"}  # big needs 3 whole nodes; 1.5 are left
    assert sample(metrics, "phalanx_bindings_total") == 3
    assert sample(metrics, "phalanx_gpus_allocated") == 20
    assert sample(metrics, "phalanx_gpus_free") == 12
    # The node holding `half` has 4 free GPUs no whole-node request can use.
    assert sample(metrics, "phalanx_gpus_free_unusable_whole_node") == 4
    assert sample(metrics, "phalanx_podgroups", phase="Inqueue", queue="default") == 1
    assert sample(metrics, "phalanx_podgroups", phase="Inqueue", queue="team") == 1
    assert sample(metrics, "phalanx_podgroups", phase="Pending", queue="team") == 1
    assert sample(metrics, "phalanx_cycle_duration_seconds_count") == 1
    assert sample(metrics, "phalanx_gang_time_to_running_seconds_count", size="2") is None

    pods_start_running(api, cluster)  # the watch shows the bindings; kubelet starts the pods
    await settled_cycle(scheduler)
    assert sample(metrics, "phalanx_podgroups", phase="Running", queue="default") == 1
    assert sample(metrics, "phalanx_podgroups", phase="Inqueue", queue="default") is None
    assert sample(metrics, "phalanx_gang_time_to_running_seconds_count", size="2") == 1
    assert sample(metrics, "phalanx_gang_time_to_running_seconds_sum", size="2") == 40

    echo_writes(api, cluster)
    await settled_cycle(scheduler)  # still Running: time to running is observed once per gang
    assert sample(metrics, "phalanx_gang_time_to_running_seconds_count", size="2") == 1
    assert sample(metrics, "phalanx_cycle_duration_seconds_count") == 3
    assert sample(metrics, "phalanx_bindings_total") == 3

    lines = records(json_logs)
    placed_lines = [r for r in lines if r["event"] == "gang placed"]
    assert {(r["group"], r["queue"], r["cycle"]) for r in placed_lines} == {
        ("ns/a", "default", 1), ("ns/half", "team", 1)}
    assert all("pod" not in r for r in lines)  # one line per gang, none per pod


async def test_refused_bindings_are_counted_by_reason() -> None:
    metrics = Metrics(CollectorRegistry())
    api = FakeApi()
    api.fail(lambda method, path: path.endswith("/a-1/binding"), status=409)
    scheduler = Scheduler(ClusterCache.from_objects(objects()), api, Settings(),
                          clock=lambda: NOW, metrics=metrics)
    await settled_cycle(scheduler)
    assert sample(metrics, "phalanx_binding_failures_total", reason="Conflict") == 1
    assert sample(metrics, "phalanx_bindings_total") == 2  # a-0 and half-0


@pytest.mark.parametrize(("reason", "label"), [
    ("409 Conflict", "Conflict"), ("404 pods \"x\" not found", "NotFound"),
    ("0 Cannot connect", "Unreachable"), ("599 odd", "599"), ("weird", "Unknown"),
    ("\u00b2 odd", "Unknown"), ("", "Unknown")])
def test_failure_labels_are_few_and_readable(reason: str, label: str) -> None:
    assert failure_label(reason) == label


class RefusingClient:
    async def call_api(self, *_: Any, **__: Any) -> Any:
        raise k8s.ApiException(status=403, reason="Forbidden")


async def test_a_refused_api_call_is_counted_by_verb_and_code() -> None:
    metrics = Metrics(CollectorRegistry())
    api = KubeApi(RefusingClient(), metrics)  # type: ignore[arg-type]
    reply = await api.request("PATCH", "/api/v1/namespaces/ns/pods/p")
    assert reply.status == 403
    assert sample(metrics, "phalanx_api_errors_total", verb="patch", code="403") == 1
