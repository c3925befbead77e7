"""bench.e2e times each binding by the API server's reply (its audit log), not by when the
benchmark's watcher saw it: a watcher lagging by seconds counted gangs bound together as
partly bound (bench/e2e/server_times.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench.e2e.server_times import binding_times, read_binding_times, watch_lag

from phalanx.cluster import LocalCluster, pki
from phalanx.cluster.components import AUDIT_LOG_FILE, LARGE_APISERVER_ARGS, Options, apiserver_args
from phalanx.cluster.description import description_from_dict
from polling import eventually


def audit_line(name: str, code: int, stamp: str, namespace: str = "bench") -> str:
    return json.dumps({
        "kind": "Event", "stage": "ResponseComplete", "verb": "create",
        "objectRef": {"resource": "pods", "namespace": namespace, "name": name,
                      "subresource": "binding"},
        "responseStatus": {"code": code}, "stageTimestamp": stamp})


def test_a_pod_is_bound_when_its_first_binding_succeeded() -> None:
    lines = [
        audit_line("a", 409, "2026-12-05T10:00:00.100000Z"),  # refused: not a binding
        audit_line("a", 201, "2026-12-05T10:00:00.250000Z"),
        audit_line("b", 201, "2026-12-05T10:00:01.000000Z", namespace="other"),
        "",
    ]
    times = binding_times(lines, "bench")
    assert list(times) == ["a"]
    assert times["a"] == pytest.approx(1796464800.25)


def test_the_watchers_lag_is_measured_against_the_server() -> None:
    answered = {f"p{i}": 100.0 for i in range(100)}
    seen = {f"p{i}": 100.0 + i / 10 for i in range(100)}
    lag = watch_lag(seen, answered)
    assert lag["pods"] == 100
    assert lag["p50_s"] == pytest.approx(5.0)
    assert lag["max_s"] == pytest.approx(9.9)


def test_large_settings_and_audit_only_when_asked() -> None:
    credentials = pki.Credentials(*(Path(f"/x/{i}") for i in range(6)), "token")
    plain = apiserver_args(Path("api"), Path("/run"), credentials, 1, 2, Options())
    both = apiserver_args(Path("api"), Path("/run"), credentials, 1, 2,
                          Options(audit_bindings=True, large=True))
    assert not any(a.startswith("--audit") for a in plain)
    assert "--max-requests-inflight=800" in plain
    assert set(LARGE_APISERVER_ARGS) <= set(both)
    assert f"--audit-log-path=/run/logs/{AUDIT_LOG_FILE}" in both


@pytest.fixture
def audited(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / "audited", die_with_parent=True, controller_manager=False,
                           audit_bindings=True)
    cluster.start()
    try:
        cluster.prepare(description_from_dict({
            "name": "audit", "layout": {"blocks": 1, "racksPerBlock": 1, "nodesPerRack": 1},
            "node": {"gpus": 8, "cpu": 16, "memory": "64Gi", "pods": 110}}))
        yield cluster
    finally:
        cluster.stop()


@pytest.mark.e2e
def test_the_api_server_logs_when_it_answered_each_binding(audited: LocalCluster) -> None:
    rest = audited.rest()
    node = audited.ready_nodes()[0]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "default"},
           "spec": {"schedulerName": "nobody",
                    "containers": [{"name": "c", "image": "busybox"}]}}
    assert rest.post("/api/v1/namespaces/default/pods", pod).status == 201
    before = time.time()
    binding = {"apiVersion": "v1", "kind": "Binding",
               "metadata": {"name": "p", "namespace": "default"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
    assert rest.post("/api/v1/namespaces/default/pods/p/binding", binding).status == 201
    after = time.time()
    again = rest.post("/api/v1/namespaces/default/pods/p/binding", binding)
    assert again.status == 409  # already bound: not a second binding time
    log = audited.run_dir / "logs" / AUDIT_LOG_FILE
    times = eventually(lambda: read_binding_times(log, "default"), timeout=30)
    assert list(times) == ["p"]
    assert before <= times["p"] <= after
