"""Preemption and reclaim carried out on the real control plane (32 kwok nodes: 8 racks of
4 nodes x 8 GPUs), in binder mode and in gate mode with the real kube-scheduler.

The cluster is filled with one low-priority gang per rack. Victim pods carry the kwok
annotation `sim.phalanx.io/hold-termination`: evicted, they stay Terminating until the
test lets them go, so each test sees the state between the evictions and the binding.
PodDisruptionBudgets are real: kube-controller-manager's disruption controller computes
how many pods may go, and the Eviction API refuses the rest (HTTP 429).
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from operator_e2e import (
    apply,
    condition,
    events_for,
    eventually,
    gang,
    group_of,
    kill_operator,
    kube_scheduler_if,
    kubectl_json,
    pods_in,
    start_operator,
    stop_operator,
)

from phalanx.cluster import LocalCluster, binaries
from phalanx.cluster.labels import HOLD_TERMINATION_ANNOTATION, TOPOLOGY_LEAF
from phalanx.kubectl.main import main as kubectl_phalanx
from phalanx.operator.main import Operator
from pod_history import PodHistory

pytestmark = pytest.mark.e2e

RACKS = 8
HOLD = {HOLD_TERMINATION_ANNOTATION: "true"}
CLASSES = {"phx-lowest": (5, None), "phx-low": (10, None), "phx-high": (1000, None),
           "phx-high-never": (1000, "Never")}


@pytest.fixture
def priority_classes(cluster: LocalCluster) -> Iterator[None]:
    objects = []
    for name, (value, policy) in CLASSES.items():
        body: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                "metadata": {"name": name}, "value": value}
        if policy:
            body["preemptionPolicy"] = policy
        objects.append(body)
    cluster.apply(objects)
    yield
    cluster.kubectl("delete", "priorityclass", *CLASSES, "--ignore-not-found", check=False)


@pytest.fixture
def queues(cluster: LocalCluster) -> Iterator[None]:
    names = {"team-a": "128", "team-b": "64"}
    cluster.apply([{"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "Queue",
                    "metadata": {"name": name}, "spec": {"guarantee": {"nvidia.com/gpu": gpus}}}
                   for name, gpus in names.items()])
    yield
    cluster.kubectl("delete", "queues.scheduling.phalanx.io", *names, "--ignore-not-found",
                    check=False)


def low_gangs(gated: bool, classes: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """One gang of 4 whole nodes per rack, all of priority phx-low unless `classes` says."""
    objects: list[dict[str, Any]] = []
    for rack in range(RACKS):
        name = f"low{rack}"
        objects += gang(name, 4, gpus=8, gated=gated, pod_annotations=HOLD,
                        priorityClassName=(classes or {}).get(rack, "phx-low"),
                        topology={"required": "rack"})
        for body in objects[-4:]:
            body["metadata"]["labels"]["gang"] = name
    return objects


async def fill(cluster: LocalCluster, namespace: str, gated: bool,
               classes: dict[int, str] | None = None) -> dict[str, dict[str, Any]]:
    await apply(cluster, low_gangs(gated, classes), namespace)

    async def all_running() -> dict[str, dict[str, Any]] | None:
        pods = await pods_in(cluster, namespace)
        running = {n: p for n, p in pods.items() if n.startswith("low")
                   and p["status"].get("phase") == "Running" and p["status"].get("startTime")}
        return running if len(running) == 4 * RACKS else None

    return await eventually(all_running, 120)


def terminating(pods: dict[str, dict[str, Any]]) -> list[str]:
    return sorted(n for n, p in pods.items() if p["metadata"].get("deletionTimestamp"))


async def victims(cluster: LocalCluster, namespace: str, count: int = 4) -> list[str]:
    async def found() -> list[str] | None:
        leaving = terminating(await pods_in(cluster, namespace))
        return leaving if len(leaving) >= count else None

    return await eventually(found, 90)


async def let_go(cluster: LocalCluster, namespace: str, names: list[str]) -> None:
    """The victims' containers stop: kwok removes the pods."""
    await asyncio.to_thread(cluster.kubectl, "annotate", "pods", "-n", namespace, *names,
                            f"{HOLD_TERMINATION_ANNOTATION}-")


def untouched(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]],
              gone: list[str]) -> None:
    """Every pod but `gone` is the same pod on the same node, not being deleted."""
    for name, pod in before.items():
        if name in gone:
            continue
        now = after[name]
        assert now["metadata"]["uid"] == pod["metadata"]["uid"], name
        assert now["spec"]["nodeName"] == pod["spec"]["nodeName"], name
        assert not now["metadata"].get("deletionTimestamp"), name


async def rack_of(cluster: LocalCluster) -> dict[str, str]:
    nodes = (await kubectl_json(cluster, "get", "nodes", "-l", "type=kwok"))["items"]
    return {n["metadata"]["name"]: n["metadata"]["labels"][TOPOLOGY_LEAF] for n in nodes}


async def reasons(cluster: LocalCluster, namespace: str, name: str) -> dict[str, dict[str, Any]]:
    return {e["reason"]: e for e in await events_for(cluster, namespace, name)}


async def placed_on(cluster: LocalCluster, namespace: str, name: str) -> set[str] | None:
    pods = await pods_in(cluster, namespace)
    nodes = {p["spec"].get("nodeName") for n, p in pods.items() if n.startswith(name + "-")
             and p["status"].get("phase") == "Running"}
    return nodes if len(nodes) == 4 and None not in nodes else None


@pytest.mark.parametrize("gated", [False, True], ids=["binder", "gate"])
async def test_a_high_gang_evicts_exactly_one_low_gang_and_runs_in_its_rack(
    cluster: LocalCluster, namespace: str, phalanx: Operator, priority_classes: None,
    tmp_path: Path, gated: bool, monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with kube_scheduler_if(cluster, gated):
        before = await fill(cluster, namespace, gated)
        history = PodHistory(cluster, namespace, tmp_path / "pods.json")
        try:
            await apply(cluster, gang("high", 4, gpus=8, gated=gated,
                                      priorityClassName="phx-high",
                                      topology={"required": "rack"}), namespace)
            gone = await victims(cluster, namespace)
            pods = await pods_in(cluster, namespace)
            assert len(gone) == 4 and len({pods[n]["metadata"]["labels"]["gang"]
                                           for n in gone}) == 1, gone  # one whole gang
            victim = pods[gone[0]]["metadata"]["labels"]["gang"]
            freed = {pods[n]["spec"]["nodeName"] for n in gone}
            untouched(before, pods, gone)
            assert not [p for n, p in pods.items() if n.startswith("high-")
                        and p["spec"].get("nodeName")]  # not bound onto room still taken

            for name in gone:  # the condition came before the deletion, naming the preemptor
                seen = history.versions(name)
                marked = [i for i, v in enumerate(seen) for c in v["status"].get("conditions", [])
                          if c["type"] == "DisruptionTarget"
                          and c["reason"] == "PreemptionByScheduler"]
                deleting = [i for i, v in enumerate(seen) if v["metadata"].get("deletionTimestamp")]
                assert marked and deleting and marked[0] < deleting[0], (name, seen)
                message = next(c["message"] for c in seen[marked[0]]["status"]["conditions"]
                               if c["type"] == "DisruptionTarget")
                assert f"{namespace}/high" in message and "1000" in message

            async def held() -> dict[str, Any] | None:
                group = await group_of(cluster, namespace, "high")
                return (group.get("status") or {}).get("nominated")

            nominated = await eventually(held, 30)
            assert set(nominated["nodes"]) == freed and nominated["reason"] == "Preempting"
            said = await eventually(lambda: _has(cluster, namespace, victim, "Preempted"), 30)
            assert f"{namespace}/high (priority 1000)" in said["message"]
            text = await explain(cluster, namespace, "high", monkeypatch)
            assert "Room held for it: 4 nodes (Preempting since" in text, text
            assert "Now: waits, Preempting: waits for 4 terminating pods" in text, text
            said = await eventually(lambda: _said(cluster, namespace, "high", "Preempting",
                                                  f"4 pods of 1 group ({namespace}/{victim}"), 30)
            assert said["type"] == "Normal"  # the scheduler at work, not a problem
        finally:
            history.stop()

        await let_go(cluster, namespace, gone)
        nodes = await eventually(lambda: placed_on(cluster, namespace, "high"), 90)
        assert nodes == freed
        assert len({(await rack_of(cluster))[n] for n in nodes}) == 1
        untouched(before, await pods_in(cluster, namespace), gone)

        async def released() -> bool:
            group = await group_of(cluster, namespace, "high")
            return "nominated" not in (group.get("status") or {})

        await eventually(released, 30)
        sample = phalanx.metrics.registry.get_sample_value
        assert sample("phalanx_evictions_total", {"reason": "Preempted"}) == 4  # never twice
        assert sample("phalanx_evicted_gpus_total", {"reason": "Preempted"}) == 32


async def test_preemption_policy_never_evicts_nothing_and_says_so(
    cluster: LocalCluster, namespace: str, phalanx: Operator, priority_classes: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = await fill(cluster, namespace, gated=False)
    await apply(cluster, gang("never", 4, gpus=8, priorityClassName="phx-high-never",
                              topology={"required": "rack"}), namespace)

    async def explained() -> str | None:
        cond = condition(await group_of(cluster, namespace, "never"), "Unschedulable")
        return cond.get("message") if "preemptionPolicy Never" in cond.get("message", "") else None

    await eventually(explained, 60)
    untouched(before, await pods_in(cluster, namespace), [])
    assert phalanx.metrics.registry.get_sample_value(
        "phalanx_evictions_total", {"reason": "Preempted"}) is None
    described = await asyncio.to_thread(cluster.kubectl, "describe", "pg", "never",
                                        "-n", namespace)
    assert "preemptionPolicy Never" in described.stdout
    text = await explain(cluster, namespace, "never", monkeypatch)
    assert "preemption is off for it (preemptionPolicy Never)" in text, text
    assert "Would evict" not in text


async def test_a_queue_below_its_guarantee_reclaims_one_gang_from_a_queue_above_its_own(
    cluster: LocalCluster, namespace: str, phalanx: Operator, queues: None,
) -> None:
    objects = low_gangs(gated=False)
    for body in objects:
        if body["kind"] == "PodGroup":
            body["spec"].pop("priorityClassName")
            body["spec"]["queue"] = "team-b"  # 256 GPUs in use, 64 guaranteed
    await apply(cluster, objects, namespace)
    before = await eventually(lambda: _all_running(cluster, namespace), 120)
    await apply(cluster, gang("a", 4, gpus=8, queue="team-a",
                              topology={"required": "rack"}), namespace)
    gone = await victims(cluster, namespace)
    pods = await pods_in(cluster, namespace)
    assert len({pods[n]["metadata"]["labels"]["gang"] for n in gone}) == 1
    untouched(before, pods, gone)
    victim = pods[gone[0]]["metadata"]["labels"]["gang"]
    said = await eventually(lambda: _has(cluster, namespace, victim, "Reclaimed"), 30)
    assert f"{namespace}/a" in said["message"] and "team-a" in said["message"]
    await let_go(cluster, namespace, gone)
    await eventually(lambda: placed_on(cluster, namespace, "a"), 90)
    assert phalanx.metrics.registry.get_sample_value(
        "phalanx_evictions_total", {"reason": "Reclaimed"}) == 4


async def test_a_disruption_budget_turns_the_preemptor_to_another_victim(
    cluster: LocalCluster, namespace: str, phalanx: Operator, priority_classes: None,
) -> None:
    """Rack 0's gang is the cheapest victim (lowest priority) but a budget keeps all its
    pods (minAvailable 4, computed by the disruption controller: 0 disruptions allowed)."""
    budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
              "metadata": {"name": "keep-low0"},
              "spec": {"minAvailable": 4, "selector": {"matchLabels": {"gang": "low0"}}}}
    await apply(cluster, [budget], namespace)
    before = await fill(cluster, namespace, gated=False, classes={0: "phx-lowest"})

    async def computed() -> bool:
        pdb = await kubectl_json(cluster, "get", "pdb", "keep-low0", "-n", namespace)
        status = pdb.get("status") or {}
        return status.get("currentHealthy") == 4 and status.get("disruptionsAllowed") == 0

    await eventually(computed, 60)
    await apply(cluster, gang("high", 4, gpus=8, priorityClassName="phx-high",
                              topology={"required": "rack"}), namespace)
    refused = await eventually(lambda: _has(cluster, namespace, "high", "EvictionRefused"), 60)
    assert f"{namespace}/low0" in refused["message"]
    gone = await victims(cluster, namespace)
    pods = await pods_in(cluster, namespace)
    assert {pods[n]["metadata"]["labels"]["gang"] for n in gone} != {"low0"}
    assert len({pods[n]["metadata"]["labels"]["gang"] for n in gone}) == 1
    untouched(before, pods, gone)  # low0 whole: not one of its pods was evicted
    cond = condition(await group_of(cluster, namespace, "high"), "Unschedulable")
    assert cond["reason"] == "Preempting" and "low0" not in cond["message"]
    await let_go(cluster, namespace, gone)
    nodes = await eventually(lambda: placed_on(cluster, namespace, "high"), 90)
    assert nodes == {before[n]["spec"]["nodeName"] for n in gone}


async def test_operator_killed_between_evictions_and_binding_keeps_the_room_held(
    ready_nodes: LocalCluster, namespace: str, priority_classes: None,
) -> None:
    cluster = ready_nodes
    first = start_operator(cluster)
    try:
        before = await fill(cluster, namespace, gated=False)
        await apply(cluster, gang("high", 4, gpus=8, priorityClassName="phx-high",
                                  topology={"required": "rack"}), namespace)
        gone = await victims(cluster, namespace)

        async def held() -> dict[str, Any] | None:
            group = await group_of(cluster, namespace, "high")
            return (group.get("status") or {}).get("nominated")

        nominated = await eventually(held, 30)
    finally:
        kill_operator(first)
    freed = {before[n]["spec"]["nodeName"] for n in gone}
    assert set(nominated["nodes"]) == freed
    # Half the room frees up while no operator runs; a group of lower priority that fits
    # there arrives.
    await let_go(cluster, namespace, gone[:2])
    await apply(cluster, gang("sneaky", 1, gpus=8, priorityClassName="phx-low"), namespace)
    second = start_operator(cluster)
    try:
        async def sneaky_waits() -> str | None:
            cond = condition(await group_of(cluster, namespace, "sneaky"), "Unschedulable")
            return cond.get("message") if cond.get("status") == "True" else None

        message = await eventually(sneaky_waits, 60)
        assert "held for another group" in message
        assert (await held()) == nominated  # the same hold, read back after the restart
        await let_go(cluster, namespace, gone[2:])
        nodes = await eventually(lambda: placed_on(cluster, namespace, "high"), 90)
        assert nodes == freed
        pods = await pods_in(cluster, namespace)
        untouched(before, pods, gone)  # no second round of evictions
        assert not pods["sneaky-0"]["spec"].get("nodeName")
    finally:
        stop_operator(second)


async def explain(cluster: LocalCluster, namespace: str, name: str,
                  monkeypatch: pytest.MonkeyPatch) -> str:
    """`kubectl phalanx explain pg NAME`, as a user runs it."""
    monkeypatch.setenv("PHALANX_KUBECTL", str(binaries.binary("kubectl", cluster.bin_dir)))
    out = io.StringIO()
    argv = ["--kubeconfig", str(cluster.kubeconfig), "explain", "pg", name, "-n", namespace]
    assert await asyncio.to_thread(kubectl_phalanx, argv, out) == 0
    return out.getvalue()



async def _has(cluster: LocalCluster, namespace: str, name: str, reason: str) -> Any:
    return (await reasons(cluster, namespace, name)).get(reason)


async def _said(cluster: LocalCluster, namespace: str, name: str, reason: str,
                part: str) -> Any:
    """The first Event of `reason` on `name` whose message holds `part`."""
    return next((e for e in await events_for(cluster, namespace, name)
                 if e["reason"] == reason and part in e["message"]), None)


async def _all_running(cluster: LocalCluster, namespace: str) -> dict[str, Any] | None:
    pods = await pods_in(cluster, namespace)
    running = {n: p for n, p in pods.items() if p["status"].get("phase") == "Running"}
    return running if len(running) == 4 * RACKS else None


async def test_budgets_on_every_victim_make_the_preemptor_wait_and_say_why(
    cluster: LocalCluster, namespace: str, phalanx: Operator, priority_classes: None,
) -> None:
    budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
              "metadata": {"name": "keep-all"},
              "spec": {"minAvailable": 4 * RACKS, "selector": {"matchExpressions": [
                  {"key": "gang", "operator": "Exists"}]}}}
    await apply(cluster, [budget], namespace)
    before = await fill(cluster, namespace, gated=False)

    async def computed() -> bool:
        pdb = await kubectl_json(cluster, "get", "pdb", "keep-all", "-n", namespace)
        status = pdb.get("status") or {}
        return status.get("currentHealthy") == 4 * RACKS and status.get("disruptionsAllowed") == 0

    await eventually(computed, 60)
    await apply(cluster, gang("high", 4, gpus=8, priorityClassName="phx-high",
                              topology={"required": "rack"}), namespace)

    async def waits() -> str | None:
        cond = condition(await group_of(cluster, namespace, "high"), "Unschedulable")
        message = cond.get("message", "")
        return message if "PodDisruptionBudget" in message else None

    message = await eventually(waits, 90)
    assert "preemption cannot help" in message
    untouched(before, await pods_in(cluster, namespace), [])
    assert phalanx.metrics.registry.get_sample_value(
        "phalanx_evictions_total", {"reason": "Preempted"}) is None


async def test_a_checkpointed_gang_is_evicted_before_gangs_that_saved_nothing(
    cluster: LocalCluster, namespace: str, phalanx: Operator, priority_classes: None,
) -> None:
    """Eight equal low gangs run; the oldest (the last by name among the oldest) reports a
    checkpoint after they all started: evicting it loses the least work, so the high gang
    takes it, and the Event says how much work it loses since that checkpoint. By size
    alone the newest went (the first by name among equals): never this one."""
    before = await fill(cluster, namespace, gated=False)
    starts: dict[str, datetime] = {}
    for pod in before.values():
        name, start = pod["metadata"]["labels"]["gang"], pod["status"]["startTime"]
        starts[name] = max(starts.get(name, datetime.min.replace(tzinfo=UTC)),
                           datetime.fromisoformat(start))
    oldest = max(n for n, s in starts.items() if s == min(starts.values()))
    saved = max(starts.values()) + timedelta(milliseconds=500)
    await asyncio.to_thread(
        cluster.kubectl, "annotate", "podgroups.scheduling.phalanx.io", oldest, "-n", namespace,
        f"scheduling.phalanx.io/checkpointed-at={saved.isoformat().replace('+00:00', 'Z')}")
    await apply(cluster, gang("high", 4, gpus=8, priorityClassName="phx-high",
                              topology={"required": "rack"}), namespace)
    gone = await victims(cluster, namespace)
    assert gone == [f"{oldest}-{i}" for i in range(4)], (gone, starts)
    untouched(before, await pods_in(cluster, namespace), gone)
    said = await eventually(lambda: _has(cluster, namespace, oldest, "Preempted"), 30)
    assert f"GPU-h of work, done since its checkpoint at {saved:%H:%M} UTC" in said["message"]
    await let_go(cluster, namespace, gone)
    await eventually(lambda: placed_on(cluster, namespace, "high"), 90)


@pytest.fixture
def protected_default_queue(cluster: LocalCluster) -> Iterator[None]:
    """The default queue, with an hour of minimum runtime before preemption."""
    cluster.apply([{"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "Queue",
                    "metadata": {"name": "default"},
                    "spec": {"preemptMinRuntimeSeconds": 3600}}])
    yield
    cluster.kubectl("delete", "queues.scheduling.phalanx.io", "default", "--ignore-not-found",
                    check=False)


async def test_a_queue_minimum_runtime_keeps_just_started_gangs_until_it_is_lowered(
    cluster: LocalCluster, namespace: str, phalanx: Operator, priority_classes: None,
    protected_default_queue: None,
) -> None:
    before = await fill(cluster, namespace, gated=False)
    await apply(cluster, gang("high", 4, gpus=8, priorityClassName="phx-high",
                              topology={"required": "rack"}), namespace)

    async def explained() -> str | None:
        cond = condition(await group_of(cluster, namespace, "high"), "Unschedulable")
        message = cond.get("message", "")
        return message if "preemptMinRuntimeSeconds (3600s)" in message else None

    message = await eventually(explained, 60)
    assert "ran less than queue default's" in message, message
    untouched(before, await pods_in(cluster, namespace), [])
    await asyncio.to_thread(cluster.kubectl, "patch", "queues.scheduling.phalanx.io", "default",
                            "--type=merge", "-p", '{"spec":{"preemptMinRuntimeSeconds":0}}')
    gone = await victims(cluster, namespace)
    assert len(gone) == 4
    await let_go(cluster, namespace, gone)
    await eventually(lambda: placed_on(cluster, namespace, "high"), 90)
