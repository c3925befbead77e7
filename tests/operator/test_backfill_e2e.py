"""Backfill on the real control plane (32 kwok nodes: 8 racks of 4 nodes x 8 GPUs), in
binder mode and in gate mode with the real kube-scheduler.

Seven racks run a 4-node gang each whose runtime limit ends in an hour; the eighth runs a
3-node gang whose limit ends in 30 minutes, and has one node free. A 4-node gang that
needs a whole rack waits: the eighth rack is reserved for it from the end of that 3-node
gang's limit. A queue-labelled Job whose activeDeadlineSeconds ends before then backfills
the free node; one whose deadline is later is kept out, and says why.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import pytest
from operator_e2e import (
    GATE,
    apply,
    condition,
    eventually,
    gang,
    group_of,
    kube_scheduler_if,
    pods_in,
)

from phalanx.cluster import LocalCluster
from phalanx.operator.main import Operator

pytestmark = pytest.mark.e2e

RACKS = 8


def filled(gated: bool) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for rack in range(RACKS - 1):
        objects += gang(f"hour{rack}", 4, gated=gated, topology={"required": "rack"},
                        runtimeLimitSeconds=3600)  # fmt: skip
    objects += gang("half", 3, gated=gated, topology={"required": "rack"},
                    runtimeLimitSeconds=1800)  # fmt: skip
    return objects


def job(name: str, deadline: int, gated: bool) -> dict[str, Any]:
    """One 8-GPU pod, a Phalanx gang by its queue label, its limit its activeDeadlineSeconds."""
    spec: dict[str, Any] = {
        "schedulerName": "default-scheduler" if gated else "phalanx",
        "restartPolicy": "Never",
        "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": {
            "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "8"},
            "limits": {"nvidia.com/gpu": "8"}}}],
    }
    if gated:
        spec["schedulingGates"] = [{"name": GATE}]
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {"scheduling.phalanx.io/queue": "default"}},
            "spec": {"parallelism": 1, "backoffLimit": 0, "activeDeadlineSeconds": deadline,
                     "template": {"metadata": {}, "spec": spec}}}  # fmt: skip


def running(pods: dict[str, dict[str, Any]], prefix: str) -> list[str]:
    return sorted(p["spec"]["nodeName"] for n, p in pods.items() if n.startswith(prefix)
                  and p["status"].get("phase") == "Running" and p["spec"].get("nodeName"))


@pytest.mark.parametrize("gated", [False, True], ids=["binder", "gate"])
async def test_a_short_job_backfills_the_room_reserved_for_a_big_gang_and_a_long_one_does_not(
    cluster: LocalCluster, namespace: str, phalanx: Operator, gated: bool,
) -> None:
    async with kube_scheduler_if(cluster, gated):
        await apply(cluster, filled(gated), namespace)

        async def full() -> dict[str, dict[str, Any]] | None:
            pods = await pods_in(cluster, namespace)
            return pods if len(running(pods, "")) == 4 * (RACKS - 1) + 3 else None

        pods = await eventually(full, 120)
        half_nodes = running(pods, "half-")
        await apply(cluster, gang("big", 4, gated=gated, topology={"required": "rack"},
                                  runtimeLimitSeconds=600), namespace)

        async def reserved() -> dict[str, Any] | None:
            status = (await group_of(cluster, namespace, "big")).get("status") or {}
            held = status.get("nominated")
            return status if held and held.get("start") and status.get("expectedStart") else None

        status = await eventually(reserved, 60)
        held = status["nominated"]
        assert held["reason"] == "Reserved" and set(half_nodes) < set(held["nodes"])
        start = datetime.fromisoformat(held["start"])
        assert status["expectedStart"]["at"] == held["start"]
        table = await asyncio.to_thread(cluster.kubectl, "get", "pg", "big", "-n", namespace)
        assert "EXPECTED-START" in table.stdout and held["start"] in table.stdout, table.stdout

        await apply(cluster, [job("short", 600, gated), job("long", 7200, gated)], namespace)
        free = (set(held["nodes"]) - set(half_nodes)).pop()

        async def backfilled() -> list[str] | None:
            nodes = running(await pods_in(cluster, namespace), "short-")
            return nodes or None

        assert await eventually(backfilled, 90) == [free]

        async def kept_out() -> str | None:
            cond = condition(await group_of(cluster, namespace, "job-long"), "Unschedulable")
            message = cond.get("message", "")
            return message if "runtime limit (7200s) ends after that" in message else None

        message = await eventually(kept_out, 60)
        assert f"reserved for {namespace}/big from {start:%H:%M} UTC" in message, message
        described = await asyncio.to_thread(cluster.kubectl, "describe", "pg", "job-long",
                                            "-n", namespace)  # fmt: skip
        assert "ends after that" in described.stdout
        assert running(await pods_in(cluster, namespace), "long-") == []
