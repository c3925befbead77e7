"""GPU sharing on a real kube-apiserver (32 kwok nodes x 8 GPUs): fractional pods and a
gang mixing whole and fractional GPUs are bound with their devices written on them,
an operator killed in between is replaced by one that rebuilds device usage from the
pods, and no device ever holds more than one GPU."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from operator_e2e import (
    apply,
    bound,
    condition,
    eventually,
    gang,
    group_of,
    kill_operator,
    kubectl_json,
    pod,
    pods_in,
    start_operator,
    stop_operator,
)

from phalanx.cluster import LocalCluster
from phalanx.core.model.names import GPU
from phalanx.core.parse import parse_node, parse_pod
from phalanx.core.snapshot.devices import device_usage

pytestmark = pytest.mark.e2e
INDEX = "scheduling.phalanx.io/gpu-index"
FRACTION = "scheduling.phalanx.io/gpu-fraction"


def shared(name: str, fraction: str, group: str | None = None) -> dict[str, Any]:
    return pod(name, group, gpus=0, annotations={FRACTION: fraction})


def mixed_gang(name: str) -> list[dict[str, Any]]:
    """A PodGroup of 3: one pod of 2 whole GPUs, two of a quarter GPU each."""
    group, whole = gang(name, 1, gpus=2)
    group["spec"]["minMember"] = 3
    whole["metadata"]["name"] = f"{name}-0"
    return [group, whole, shared(f"{name}-1", "0.25", name), shared(f"{name}-2", "0.25", name)]


class Unbound(list[str]):
    """Falsy while some pods are unbound; a timeout's message names them."""

    def __bool__(self) -> bool:
        return not super().__len__()

    def __repr__(self) -> str:
        return f"unbound: {', '.join(self)}" if super().__len__() else "all bound"


async def all_bound(cluster: LocalCluster, namespace: str, names: list[str]) -> Unbound:
    pods = await pods_in(cluster, namespace)
    return Unbound(n for n in names if not pods.get(n, {}).get("spec", {}).get("nodeName"))


async def no_device_over_one_gpu(cluster: LocalCluster) -> None:
    """Every node's devices as the pods on it say (the core's own rebuild): none above
    1000 milli, and no device both wholly taken and shared."""
    nodes = {n["metadata"]["name"]: parse_node(n)
             for n in (await kubectl_json(cluster, "get", "nodes"))["items"]}
    pods = [parse_pod(p) for p in (await kubectl_json(cluster, "get", "pods", "-A"))["items"]]
    for name, node in nodes.items():
        here = [p for p in pods if p.node_name == name and not p.finished]
        usage = device_usage(node, here)
        assert all(used <= 1000 for used in usage.used), (name, usage.used)
        whole = {s.index for p in here if GPU in p.requests for s in usage.shares[p.key]}
        parts = {s.index for p in here if p.fractional for s in usage.shares[p.key]}
        assert not whole & parts, (name, usage.shares)


async def fragmented_shown(cluster: LocalCluster) -> bool:
    """The NetworkTopology status counts the GPUs fractional pods share as fragmented."""
    status = (await kubectl_json(cluster, "get", "ntopo", "default")).get("status") or {}
    root = [row for row in status.get("tree") or [] if not row.get("parent")]
    return sum(row.get("fragmentedGpus", 0) for row in root) >= 1


def devices_written(pods: dict[str, dict[str, Any]], name: str) -> list[int]:
    text = (pods[name]["metadata"].get("annotations") or {}).get(INDEX, "")
    return [int(i) for i in text.split(",")] if text else []


def shared_devices(pods: dict[str, dict[str, Any]], names: list[str]) -> set[tuple[str, int]]:
    """(node, device) of each fractional pod among `names`."""
    return {(pods[n]["spec"]["nodeName"], index) for n in names
            if FRACTION in (pods[n]["metadata"].get("annotations") or {})
            for index in devices_written(pods, n)}


async def test_fractional_and_mixed_gangs_share_devices_across_an_operator_restart(
    ready_nodes: LocalCluster, namespace: str
) -> None:
    cluster = ready_nodes
    # 2.3 GPUs of fractions: at least one GPU stays partly used (fragmented)
    first_wave = [shared(f"half-{i}", "0.5") for i in range(3)] + [shared("third", "0.3")]
    first_wave += mixed_gang("mix")
    await apply(cluster, first_wave, namespace)
    names = [o["metadata"]["name"] for o in first_wave if o["kind"] == "Pod"]
    operator = start_operator(cluster)
    try:
        await eventually(lambda: all_bound(cluster, namespace, names), 90)
        await eventually(lambda: fragmented_shown(cluster), 60)
    finally:
        kill_operator(operator)
    pods = await pods_in(cluster, namespace)
    assert len(devices_written(pods, "mix-0")) == 2
    for name in names:
        if name != "mix-0":
            assert len(devices_written(pods, name)) == 1, name
    quarters = {(pods[n]["spec"]["nodeName"], *devices_written(pods, n))
                for n in ("mix-1", "mix-2")}
    assert len(quarters) == 1  # both quarters of the gang share one device
    await no_device_over_one_gpu(cluster)

    second_wave = [shared(f"late-{i}", "0.5") for i in range(3)]
    second_wave += [pod("late-whole", None, gpus=1), shared("late-big", "0.75")]
    await apply(cluster, second_wave, namespace)
    late = [o["metadata"]["name"] for o in second_wave]
    operator = start_operator(cluster)
    try:
        await eventually(lambda: all_bound(cluster, namespace, late), 90)
        await no_device_over_one_gpu(cluster)
        pods = await pods_in(cluster, namespace)
        assert all(devices_written(pods, n) for n in late)
        # the new operator put late fractions on devices the first one had shared, so
        # it packed against the usage it rebuilt from the pods, not around it
        assert shared_devices(pods, names) & shared_devices(pods, late)
    finally:
        stop_operator(operator)


async def test_an_invalid_share_is_refused_on_the_pod_and_its_group(
    ready_nodes: LocalCluster, namespace: str
) -> None:
    cluster = ready_nodes
    group, member = gang("bad-gang", 1, gpus=0)
    member["metadata"]["annotations"][FRACTION] = "1.5"
    await apply(cluster, [shared("too-much", "0"), group, member], namespace)
    operator = start_operator(cluster)
    try:
        async def refused() -> dict[str, Any] | None:
            pods = await pods_in(cluster, namespace)
            shown = [c for c in pods["too-much"]["status"].get("conditions") or []
                     if c["type"] == "PodScheduled"]
            return shown[0] if shown and "gpu-fraction" in shown[0].get("message", "") else None

        said = await eventually(refused, 60)
        assert "between 0 and 1" in said["message"]
        reported = await eventually(lambda: _unschedulable(cluster, namespace, "bad-gang"), 60)
        assert reported["reason"] == "InvalidSpec" and "pod bad-gang-0" in reported["message"]
        events = (await kubectl_json(
            cluster, "get", "events", "-n", namespace,
            "--field-selector=involvedObject.kind=Pod,involvedObject.name=too-much"))["items"]
        assert any("gpu-fraction" in e["message"] for e in events)
        assert bound(await pods_in(cluster, namespace), "bad-gang") == []
    finally:
        stop_operator(operator)


async def _unschedulable(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    found = condition(await group_of(cluster, namespace, name), "Unschedulable")
    return found if found.get("status") == "True" else {}




async def test_gate_mode_writes_the_devices_with_the_ungate_and_kube_scheduler_binds_there(
    ready_nodes: LocalCluster, namespace: str
) -> None:
    cluster = ready_nodes
    group, *members = gang("gated-share", 3, gpus=0, gated=True)
    for member in members:
        member["metadata"]["annotations"][FRACTION] = "0.3"
    names = [m["metadata"]["name"] for m in members]
    await asyncio.to_thread(cluster.start_scheduler)
    operator = start_operator(cluster)
    try:
        await apply(cluster, [group, *members], namespace)
        await eventually(lambda: all_bound(cluster, namespace, names), 90)
        pods = await pods_in(cluster, namespace)
        for name in names:
            spec = pods[name]["spec"]
            assert spec["schedulerName"] == "default-scheduler"  # kube-scheduler bound it
            assert len(devices_written(pods, name)) == 1, name
        assert len({(pods[n]["spec"]["nodeName"], *devices_written(pods, n)) for n in names}) == 1
        await no_device_over_one_gpu(cluster)
    finally:
        stop_operator(operator)
        await asyncio.to_thread(cluster.stop_scheduler)
