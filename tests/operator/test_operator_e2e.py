"""The operator on a real kube-apiserver with 32 kwok nodes (2 blocks x 4 racks x 4 nodes x 8 GPUs).

Each test runs the operator in-process (fixture `phalanx`), except the kill/restart test,
which runs `python -m phalanx operator` as a subprocess and SIGKILLs it.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from operator_e2e import (
    apply,
    bound,
    condition,
    events_for,
    eventually,
    gang,
    group_of,
    kill_operator,
    kubectl_json,
    members,
    pods_in,
    start_operator,
    stop_operator,
)

from phalanx.cluster import LocalCluster
from phalanx.core.model.names import GPU_INDEX_ANNOTATION, PLAN_ANNOTATION
from phalanx.operator.main import Operator
from phalanx.operator.plans import Plan

pytestmark = pytest.mark.e2e
RACK = "network.topology.nvidia.com/leaf"


async def node_labels(cluster: LocalCluster) -> dict[str, dict[str, str]]:
    items = (await kubectl_json(cluster, "get", "nodes"))["items"]
    return {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in items}


def gpus(pod: dict[str, Any]) -> int:
    return sum(int(c["resources"]["requests"].get("nvidia.com/gpu", 0))
               for c in pod["spec"]["containers"])


async def no_node_overcommitted(cluster: LocalCluster) -> None:
    items = (await kubectl_json(cluster, "get", "pods", "-A"))["items"]
    used: dict[str, int] = {}
    for pod in items:
        node = pod["spec"].get("nodeName")
        if node and pod["status"].get("phase") not in ("Succeeded", "Failed"):
            used[node] = used.get(node, 0) + gpus(pod)
    assert all(v <= 8 for v in used.values()), used


async def test_startup_creates_the_default_queue_and_reports_the_topology(
    cluster: LocalCluster, phalanx: Operator
) -> None:
    queue = await kubectl_json(cluster, "get", "queues.scheduling.phalanx.io", "default")
    assert queue["metadata"]["name"] == "default"

    async def topology_status() -> dict[str, Any]:
        topology = await kubectl_json(cluster, "get", "networktopologies.scheduling.phalanx.io",
                                      "default")
        return topology.get("status") or {}

    status = await eventually(topology_status)
    assert status["levels"] == 4 and status["nodes"] >= 32
    racks = [row for row in status["tree"] if row["level"] == "rack"]
    assert len(racks) == 8 and all(row["nodes"] == 4 and row["gpus"] == 32 for row in racks)
    blocks = [row for row in status["tree"] if row["level"] == "block"]
    assert sum(row["freeGpus"] for row in blocks) <= sum(row["gpus"] for row in blocks) == 256


async def test_two_gangs_room_for_one_then_the_second_runs(
    cluster: LocalCluster, namespace: str, phalanx: Operator
) -> None:
    await apply(cluster, gang("first", 20, pod_annotations={
        "sim.phalanx.io/complete-after-seconds": "12"}), namespace)
    await eventually(lambda: _all_bound(cluster, namespace, "first", 20))
    await apply(cluster, gang("second", 16), namespace)  # 160 + 128 GPUs > 256
    async def second_reports_why() -> dict[str, Any]:
        group = await group_of(cluster, namespace, "second")
        return group if condition(group, "Unschedulable").get("status") == "True" else {}
    second = await eventually(second_reports_why)
    pods = await pods_in(cluster, namespace)
    if all(pods[n]["status"].get("phase") == "Running" for n in members(pods, "first")):
        assert bound(pods, "second") == []
    assert second["status"]["phase"] in ("Pending", "Inqueue")
    first = await eventually(lambda: _phase(cluster, namespace, "first", "Completed"), 60)
    assert first["status"]["succeeded"] == 20
    await eventually(lambda: _all_bound(cluster, namespace, "second", 16), 60)
    await eventually(lambda: _phase(cluster, namespace, "second", "Running"))
    await no_node_overcommitted(cluster)
    # Finished pods cleaned up (as a Job's TTL would): the group stays Completed.
    await asyncio.to_thread(cluster.kubectl, "delete", "pods", "-n", namespace,
                            *[f"first-{i}" for i in range(20)], "--wait=false")
    await eventually(lambda: _gone(cluster, namespace, "first"))
    before = phalanx.loop.cycles
    await eventually(lambda: _cycles_since(phalanx, before, 3))
    first = await group_of(cluster, namespace, "first")
    assert first["status"]["phase"] == "Completed"
    assert condition(first, "Unschedulable")["status"] == "False"


async def test_required_rack_lands_in_one_rack_preferred_spans_only_when_needed(
    cluster: LocalCluster, namespace: str, phalanx: Operator
) -> None:
    await apply(cluster, gang("in-rack", 4, gpus=8, topology={"required": "rack"})
                + gang("spread", 6, gpus=8, topology={"preferred": "rack"})
                + gang("impossible", 6, gpus=8, topology={"required": "rack"}), namespace)
    await eventually(lambda: _all_bound(cluster, namespace, "in-rack", 4))
    await eventually(lambda: _all_bound(cluster, namespace, "spread", 6))
    labels = await node_labels(cluster)
    pods = await pods_in(cluster, namespace)
    racks = {labels[pods[n]["spec"]["nodeName"]][RACK] for n in members(pods, "in-rack")}
    assert len(racks) == 1
    spread_racks = {labels[pods[n]["spec"]["nodeName"]][RACK] for n in members(pods, "spread")}
    assert len(spread_racks) == 2  # 48 GPUs: no 32-GPU rack holds them, two racks do
    spread = await eventually(lambda: _phase(cluster, namespace, "spread", "Running"))
    placement = spread["status"]["placement"]
    assert placement["climbedLevels"] >= 1 and placement["level"] == "block"
    assert "climbed" in condition(spread, "Scheduled")["message"]
    impossible = await group_of(cluster, namespace, "impossible")
    assert bound(pods, "impossible") == []
    assert condition(impossible, "Unschedulable")["status"] == "True"
    assert condition(impossible, "Unschedulable")["reason"] == "NoDomainFits"


async def test_volcano_and_scheduler_plugins_pods_are_gang_scheduled(
    cluster: LocalCluster, namespace: str, phalanx: Operator
) -> None:
    await apply(cluster, gang("volcano", 3, gpus=2, style="volcano")
                + gang("plugins", 3, gpus=2, style="plugins"), namespace)
    for name in ("volcano", "plugins"):
        await eventually(lambda name=name: _phase(cluster, namespace, name, "Running"))
        pods = await pods_in(cluster, namespace)
        assert len(bound(pods, name)) == 3
    # Kopf watched these pods and their nodes: it must have written nothing onto them. The
    # annotations Phalanx writes on purpose ride on a pod's bind: its GPU devices, and on a
    # gang's first pod the gang's plan.
    nodes = {p["spec"]["nodeName"] for p in pods.values()}
    watched = [*pods.values(), *[n for n in (await kubectl_json(cluster, "get", "nodes"))["items"]
                                 if n["metadata"]["name"] in nodes]]
    for body in watched:
        meta = body["metadata"]
        assert not meta.get("finalizers"), meta["name"]
        deliberate = ({GPU_INDEX_ANNOTATION, PLAN_ANNOTATION} if "nodeName" in body["spec"]
                      else set())
        written = [k for k in meta.get("annotations") or {}
                   if ("kopf" in k or k.startswith("scheduling.phalanx.io/"))
                   and k not in deliberate]
        assert written == [], (meta["name"], written)


async def test_gate_mode_kube_scheduler_binds_where_phalanx_chose(
    cluster: LocalCluster, namespace: str, phalanx: Operator
) -> None:
    await asyncio.to_thread(cluster.start_scheduler)
    try:
        await apply(cluster, gang("gated", 4, gpus=4, gated=True,
                                  topology={"required": "rack"}), namespace)
        group = await eventually(lambda: _phase(cluster, namespace, "gated", "Running"), 90)
        pods = await pods_in(cluster, namespace)
        chosen = set(group["status"]["placement"]["nodes"])
        for name in members(pods, "gated"):
            spec = pods[name]["spec"]
            assert not spec.get("schedulingGates")
            assert spec["schedulerName"] == "default-scheduler"  # kube-scheduler bound it
            terms = spec["affinity"]["nodeAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            pinned = terms[0]["matchFields"][0]["values"][0]
            assert spec["nodeName"] == pinned and pinned in chosen
        labels = await node_labels(cluster)
        assert len({labels[pods[n]["spec"]["nodeName"]][RACK] for n in pods}) == 1
    finally:
        await asyncio.to_thread(cluster.stop_scheduler)


async def test_deleting_a_group_or_a_pod_while_waiting_binds_nothing(
    cluster: LocalCluster, namespace: str, phalanx: Operator
) -> None:
    await apply(cluster, gang("blocker", 31, gpus=8), namespace)  # 8 of 256 GPUs stay free
    await eventually(lambda: _all_bound(cluster, namespace, "blocker", 31))
    await apply(cluster, gang("lose-pod", 4, gpus=8) + gang("lose-group", 2, gpus=8), namespace)
    await eventually(lambda: _reason(cluster, namespace, "lose-pod"))
    await eventually(lambda: _reason(cluster, namespace, "lose-group"))
    await asyncio.to_thread(cluster.kubectl, "delete", "pod", "-n", namespace, "lose-pod-0",
                            "--wait=false")
    await asyncio.to_thread(cluster.kubectl, "delete", "pg", "-n", namespace, "lose-group")
    await asyncio.to_thread(cluster.kubectl, "delete", "pods", "-n", namespace,
                            *[f"blocker-{i}" for i in range(31)], "--wait=false")
    await eventually(lambda: _gone(cluster, namespace, "blocker"))
    before = phalanx.loop.cycles
    await eventually(lambda: _cycles_since(phalanx, before, 4))
    pods = await pods_in(cluster, namespace)
    assert bound(pods, "lose-pod") == [] and bound(pods, "lose-group") == []
    # A gang short of pods is reported once it is past the operator's arrival grace.
    assert await eventually(
        lambda: _reason_is(cluster, namespace, "lose-pod", "GangIncomplete"))
    pods = await pods_in(cluster, namespace)
    assert bound(pods, "lose-pod") == [] and bound(pods, "lose-group") == []
    events = (await kubectl_json(  # the way `kubectl describe pod` finds them
        cluster, "get", "events", "-n", namespace,
        "--field-selector=involvedObject.kind=Pod,involvedObject.name=lose-group-0"))["items"]
    assert any(e["reason"] == "GroupNotFound" for e in events)


async def test_bad_input_gives_reasons_and_events_never_a_stuck_loop(
    cluster: LocalCluster, namespace: str, phalanx: Operator
) -> None:
    await asyncio.to_thread(cluster.apply, [{  # no hostname or block label, an empty rack
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": f"garbage-{namespace}", "labels": {RACK: ""}}}])
    await apply(cluster, gang("no-queue", 2, gpus=1, queue="missing")
                + gang("no-level", 2, gpus=1, topology={"required": "galaxy"})
                + gang("too-fat", 2, gpus=16)
                + gang("fine", 2, gpus=1), namespace)
    expected = {"no-queue": "QueueNotFound", "no-level": "LevelNotFound"}
    for name, reason in expected.items():
        got = await eventually(lambda name=name: _reason(cluster, namespace, name))
        assert got == reason
    assert await eventually(lambda: _reason(cluster, namespace, "too-fat")) in (
        "InsufficientResources", "NoDomainFits")
    await eventually(lambda: _phase(cluster, namespace, "fine", "Running"))
    events = await events_for(cluster, namespace, "no-queue")
    assert any(e["reason"] == "QueueNotFound" for e in events)
    assert phalanx.loop.errors == 0
    await asyncio.to_thread(cluster.kubectl, "delete", "node", f"garbage-{namespace}",
                            check=False)


async def test_an_idle_cluster_causes_no_status_writes(
    cluster: LocalCluster, namespace: str, phalanx: Operator
) -> None:
    await apply(cluster, gang("steady", 2, gpus=1) + gang("stuck", 2, gpus=1, queue="nope"),
                namespace)
    await eventually(lambda: _phase(cluster, namespace, "steady", "Running"))
    await eventually(lambda: _reason(cluster, namespace, "stuck"))
    queue = await kubectl_json(cluster, "get", "queues.scheduling.phalanx.io", "default")
    assert queue["status"]["running"] >= 1
    assert int(queue["status"]["allocated"]["nvidia.com/gpu"]) >= 2
    before = phalanx.loop.cycles
    await eventually(lambda: _cycles_since(phalanx, before, 2))
    versions = await _versions(cluster, namespace)
    writes = phalanx.scheduler.writes.counts.status_writes
    before = phalanx.loop.cycles
    await eventually(lambda: _cycles_since(phalanx, before, 4))
    assert await _versions(cluster, namespace) == versions
    assert phalanx.scheduler.writes.counts.status_writes == writes


async def test_a_burst_of_pod_events_causes_few_cycles(
    cluster: LocalCluster, namespace: str, phalanx: Operator
) -> None:
    before, pokes = phalanx.loop.cycles, phalanx.loop.pokes
    started = time.monotonic()
    await apply(cluster, gang("burst", 64, gpus=1), namespace)
    await eventually(lambda: _all_bound(cluster, namespace, "burst", 64), interval=0.1)
    elapsed = time.monotonic() - started
    await eventually(lambda: _phase(cluster, namespace, "burst", "Running"))
    events, cycles = phalanx.loop.pokes - pokes, phalanx.loop.cycles - before
    print(f"64-pod gang bound {elapsed:.1f}s after apply; {events} watch events, "
          f"{cycles} cycles")
    assert events >= 128  # creation, binding and running of 64 pods at least
    assert cycles < events / 4


async def test_operator_killed_while_placing_finishes_or_drops_its_plans(
    ready_nodes: LocalCluster, namespace: str
) -> None:
    cluster = ready_nodes
    target = await _crash_in_the_middle(cluster, namespace)
    sizes = {f"job{i}": 4 for i in range(12)}  # 12 x 4 pods x 4 GPUs = 192 GPUs: all fit
    objects: list[dict[str, Any]] = []
    for name, size in sizes.items():
        objects += gang(name, size, gpus=4)
    await apply(cluster, objects, namespace)
    first = start_operator(cluster)
    try:
        await eventually(lambda: _any_bound(cluster, namespace, "job"), 60, interval=0.05)
    finally:
        kill_operator(first)
    pods = await pods_in(cluster, namespace)
    print("bound when killed:", {n: len(bound(pods, n)) for n in sizes})
    second = start_operator(cluster)
    try:
        for name, size in {**sizes, "crashed": 2}.items():
            await eventually(lambda n=name, s=size: _all_bound(cluster, namespace, n, s), 90)
        await no_node_overcommitted(cluster)
        pods = await pods_in(cluster, namespace)
        assert pods["crashed-1"]["spec"]["nodeName"] == target  # the plan was finished
    finally:
        stop_operator(second)


async def _crash_in_the_middle(cluster: LocalCluster, namespace: str) -> str:
    """The state a crash between two bindings leaves: one of two pods bound, with the plan;
    returns the node the plan gives the other."""
    nodes = (await kubectl_json(cluster, "get", "nodes", "-l", "type=kwok"))["items"]
    busy = {p["spec"].get("nodeName") for p in (await kubectl_json(
        cluster, "get", "pods", "-A"))["items"]}
    free = [n["metadata"]["name"] for n in nodes if n["metadata"]["name"] not in busy]
    # crashed-1's node is not crashed-0's: placed afresh, it would join crashed-0 (room
    # for both), so only the plan puts it there
    first, target = free[0], free[-1]
    plan = Plan("crashed-plan", f"{namespace}/crashed", {
        f"{namespace}/crashed-0": first, f"{namespace}/crashed-1": target}, time.time())
    objects = gang("crashed", 2, gpus=2)
    await apply(cluster, objects, namespace)
    # the first binding carries the plan, as the operator writes it
    binding = {"apiVersion": "v1", "kind": "Binding",
               "metadata": {"name": "crashed-0",
                            "annotations": {PLAN_ANNOTATION: plan.annotation()}},
               "target": {"apiVersion": "v1", "kind": "Node", "name": first}}
    await asyncio.to_thread(
        cluster.kubectl, "create", "--raw",
        f"/api/v1/namespaces/{namespace}/pods/crashed-0/binding", "-f", "-",
        input=json.dumps(binding))
    return target



async def _any_bound(cluster: LocalCluster, namespace: str, prefix: str) -> bool:
    pods = await pods_in(cluster, namespace)
    return any(p["spec"].get("nodeName") for n, p in pods.items() if n.startswith(prefix))


async def _all_bound(cluster: LocalCluster, namespace: str, name: str, size: int) -> bool:
    pods = await pods_in(cluster, namespace)
    return len(bound(pods, name)) == size


async def _phase(cluster: LocalCluster, namespace: str, name: str, phase: str) -> Any:
    group = await group_of(cluster, namespace, name)
    return group if (group.get("status") or {}).get("phase") == phase else None


async def _reason(cluster: LocalCluster, namespace: str, name: str) -> str | None:
    group = await group_of(cluster, namespace, name)
    cond = condition(group, "Unschedulable")
    return cond.get("reason") if cond.get("status") == "True" else None


async def _reason_is(cluster: LocalCluster, namespace: str, name: str, reason: str) -> bool:
    return await _reason(cluster, namespace, name) == reason


async def _gone(cluster: LocalCluster, namespace: str, prefix: str) -> bool:
    return not members(await pods_in(cluster, namespace), prefix)


async def _cycles_since(operator: Operator, before: int, count: int) -> bool:
    return operator.loop.cycles >= before + count


async def _versions(cluster: LocalCluster, namespace: str) -> dict[str, str]:
    groups = (await kubectl_json(cluster, "get", "pg", "-n", namespace))["items"]
    queues = (await kubectl_json(cluster, "get", "queues.scheduling.phalanx.io"))["items"]
    tops = (await kubectl_json(cluster, "get", "networktopologies.scheduling.phalanx.io"))["items"]
    return {o["kind"] + "/" + o["metadata"]["name"]: o["metadata"]["resourceVersion"]
            for o in [*groups, *queues, *tops]}
