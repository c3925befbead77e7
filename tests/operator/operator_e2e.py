"""Builders and waits for the operator's end-to-end tests (objects as plain dicts)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from phalanx.cluster import LocalCluster
from phalanx.config import Settings

# The operator under test: quick cycles, short grace and backoff.
FAST = Settings(
    debounce_seconds=0.1,
    max_delay_seconds=0.5,
    cycle_period_seconds=1.0,
    partial_grace_seconds=5.0,
    backoff_initial_seconds=1.0,
    backoff_max_seconds=4.0,
)

GROUP_LABEL = "scheduling.phalanx.io/pod-group"
GATE = "scheduling.phalanx.io/gang"


def podgroup(name: str, min_member: int, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name}, "spec": {"minMember": min_member, **spec}}


def pod(name: str, group: str | None, gpus: int = 8, style: str = "phalanx",
        gated: bool = False, annotations: dict[str, str] | None = None,
        owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {}, "annotations": dict(annotations or {})}
    if group and style == "phalanx":
        meta["labels"][GROUP_LABEL] = group
    elif group and style == "volcano":
        meta["annotations"]["scheduling.k8s.io/group-name"] = group
    elif group and style == "plugins":
        meta["labels"]["scheduling.x-k8s.io/pod-group"] = group
    if owner:
        meta["ownerReferences"] = [owner]
    spec: dict[str, Any] = {
        "schedulerName": "default-scheduler" if gated else "phalanx",
        "restartPolicy": "Never",
        "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": {
            "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(gpus)},
            "limits": {"nvidia.com/gpu": str(gpus)}}}],
    }
    if gated:
        spec["schedulingGates"] = [{"name": GATE}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def gang(name: str, size: int, gpus: int = 8, min_member: int | None = None,
         style: str = "phalanx", gated: bool = False, pod_annotations: dict[str, str] | None = None,
         **spec: Any) -> list[dict[str, Any]]:
    group = podgroup(name, min_member or size, **spec)
    pods = [pod(f"{name}-{i}", name, gpus, style, gated, pod_annotations) for i in range(size)]
    return [group, *pods]


async def kubectl_json(cluster: LocalCluster, *args: str) -> Any:
    result = await asyncio.to_thread(cluster.kubectl, *args, "-o", "json")
    return json.loads(result.stdout)


async def apply(cluster: LocalCluster, objects: list[dict[str, Any]], namespace: str) -> None:
    await asyncio.to_thread(cluster.apply, objects, namespace)


async def pods_in(cluster: LocalCluster, namespace: str) -> dict[str, dict[str, Any]]:
    items = (await kubectl_json(cluster, "get", "pods", "-n", namespace))["items"]
    return {p["metadata"]["name"]: p for p in items}


async def group_of(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    return await kubectl_json(cluster, "get", "podgroups.scheduling.phalanx.io", name,
                              "-n", namespace)


def bound(pods: dict[str, dict[str, Any]], prefix: str) -> list[str]:
    return [n for n, p in pods.items() if n.startswith(prefix + "-") and p["spec"].get("nodeName")]


def members(pods: dict[str, dict[str, Any]], prefix: str) -> list[str]:
    return [n for n in pods if n.startswith(prefix + "-")]


def condition(group: dict[str, Any], kind: str) -> dict[str, Any]:
    for cond in (group.get("status") or {}).get("conditions") or []:
        if cond["type"] == kind:
            return dict(cond)
    return {}


async def eventually(check: Callable[[], Awaitable[Any]], timeout: float = 60.0,
                     interval: float = 0.5) -> Any:
    """Poll `check` until it returns a truthy value; fail with the last value on timeout."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not reached within {timeout}s; last value: {last!r}")


async def events_for(cluster: LocalCluster, namespace: str, name: str) -> list[dict[str, Any]]:
    items = (await kubectl_json(cluster, "get", "events", "-n", namespace))["items"]
    return [e for e in items if e["involvedObject"].get("name") == name]


def start_operator(cluster: LocalCluster) -> subprocess.Popen[bytes]:
    """`python -m phalanx operator` as a process of its own (to be SIGKILLed by a test)."""
    return subprocess.Popen(
        [sys.executable, "-m", "phalanx", "operator", f"--kubeconfig={cluster.kubeconfig}",
         "--period=1", "--metrics-port=0"],  # 8080 may be taken on a shared machine
        start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def kill_operator(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL: no handover, the leftovers are the next operator's to finish."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def stop_operator(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, and SIGKILL if it has not stopped within 30 s."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        kill_operator(process)


@contextlib.asynccontextmanager
async def kube_scheduler_if(cluster: LocalCluster, gated: bool) -> AsyncIterator[None]:
    """The real kube-scheduler for the length of a gate-mode test (binder mode: none)."""
    if not gated:
        yield
        return
    await asyncio.to_thread(cluster.start_scheduler)
    try:
        yield
    finally:
        await asyncio.to_thread(cluster.stop_scheduler)
