"""kube-apiserver CPU per request, by kind of request, on a fresh local cluster.

Phalanx's writes per gang are PodGroup writes (a custom resource: JSON, schema
validation, managed fields); kube-scheduler's per pod are Events (a built-in type). This
measures what each costs the API server, so the end-to-end comparison can be read per
request: `python -m bench.e2e.api_cost [--requests N]` prints milliseconds of kube-apiserver
CPU (utime + stime from /proc) per request, N requests of each kind, 32 in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import tempfile
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import aiohttp

from bench.e2e.measure import read_process
from phalanx.cluster import LocalCluster

GROUPS = "/apis/scheduling.phalanx.io/v1alpha1/namespaces/cost/podgroups"
EVENTS = "/api/v1/namespaces/cost/events"
MERGE = "application/merge-patch+json"
PLAN = "scheduling.phalanx.io/plan"


def _group(i: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": f"g{i}"}, "spec": {"minMember": 16}}


def _plan() -> str:
    """A 16-pod plan, the annotation the operator writes before binding a gang."""
    pods = {f"cost/g-{j}": f"node-{j}" for j in range(16)}
    return json.dumps({"id": "0123456789ab", "pods": pods})


def _status() -> dict[str, Any]:
    scheduled = {"type": "Scheduled", "status": "True", "reason": "Scheduled",
                 "message": "placed 16 pods", "lastTransitionTime": "2026-11-30T00:00:00Z"}
    return {"status": {"phase": "Running", "running": 16, "pending": 0, "succeeded": 0,
                       "failed": 0, "conditions": [scheduled]}}


def _event(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": "cost.", "namespace": "cost"},
            "involvedObject": {"kind": "Pod", "name": f"p{i}", "namespace": "cost"},
            "reason": "Scheduled", "message": f"Successfully assigned cost/p{i} to node-1",
            "type": "Normal", "source": {"component": "cost"},
            "firstTimestamp": "2026-11-30T00:00:00Z", "lastTimestamp": "2026-11-30T00:00:00Z",
            "count": 1}


Request = tuple[str, str, dict[str, Any], str]  # method, path, body, content type


def kinds(n: int) -> dict[str, list[Request]]:
    json_type = "application/json"
    return {
        "POST podgroups (create)": [("POST", GROUPS, _group(i), json_type) for i in range(n)],
        "PATCH podgroups (plan annotation set)": [
            ("PATCH", f"{GROUPS}/g{i}", {"metadata": {"annotations": {PLAN: _plan()}}}, MERGE)
            for i in range(n)],
        "PATCH podgroups (plan annotation cleared)": [
            ("PATCH", f"{GROUPS}/g{i}", {"metadata": {"annotations": {PLAN: None}}}, MERGE)
            for i in range(n)],
        "PATCH podgroups/status": [
            ("PATCH", f"{GROUPS}/g{i}/status", _status(), MERGE) for i in range(n)],
        "POST events": [("POST", EVENTS, _event(i), json_type) for i in range(n)],
    }


async def measure(cluster: LocalCluster, apiserver: int, n: int) -> dict[str, float]:
    context = ssl.create_default_context(cafile=str(cluster.ca_cert))
    headers = {"Authorization": f"Bearer {cluster.token}"}
    slots = asyncio.Semaphore(32)
    connector = aiohttp.TCPConnector(limit=32, ssl=context)
    async with aiohttp.ClientSession(cluster.server, connector=connector,
                                     headers=headers) as session:

        async def send(request: Request) -> None:
            method, path, body, content_type = request
            async with slots, session.request(method, path, data=json.dumps(body),
                                              headers={"Content-Type": content_type}) as reply:
                text = await reply.text()
                if reply.status >= 300:
                    raise RuntimeError(f"{method} {path}: {reply.status} {text[:200]}")

        await send(("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": "cost"}},
                    "application/json"))
        costs = {}
        for name, requests in kinds(n).items():
            costs[name] = await _cpu_per_request(apiserver, [send(r) for r in requests])
    return costs


async def _cpu_per_request(pid: int, jobs: list[Awaitable[None]]) -> float:
    before = _cpu(pid)
    await asyncio.gather(*jobs)
    await asyncio.sleep(1.0)  # the watch cache and GC catch up inside the measurement
    return 1000 * (_cpu(pid) - before) / len(jobs)


def _cpu(pid: int) -> float:
    reading = read_process(pid)
    if reading is None:
        raise RuntimeError(f"kube-apiserver (pid {pid}) is gone")
    return reading.cpu_seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.e2e.api_cost", description=__doc__)
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args(argv)
    cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="bench-api-cost-")))
    cluster.start()
    try:
        cluster.install_crds()
        costs = asyncio.run(measure(cluster, _apiserver_pid(cluster), args.requests))
    finally:
        cluster.stop()
    for name, ms in costs.items():
        print(f"{name:45s} {ms:5.2f} ms kube-apiserver CPU per request")
    return 0


def _apiserver_pid(cluster: LocalCluster) -> int:
    return cluster.pids()["kube-apiserver"]


if __name__ == "__main__":
    raise SystemExit(main())
