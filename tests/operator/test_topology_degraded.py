"""A NetworkTopology some GPU nodes do not fit says so: condition `Degraded` naming the level
and how many nodes lack it, a Warning Event once (not every cycle, not after a restart)."""

from __future__ import annotations

import copy
import json
from typing import Any

from operator_fakes import QUEUE, TOPOLOGY, FakeApi, node, settled_cycle

from phalanx.config import Settings
from phalanx.operator.cache import ClusterCache
from phalanx.operator.scheduler import Scheduler


def with_levels(*levels: tuple[str, str]) -> dict[str, Any]:
    topology = copy.deepcopy(TOPOLOGY)
    topology["spec"]["levels"] = [{"name": name, "nodeLabels": [label]} for name, label in levels]
    return topology


def cpu_node(name: str) -> dict[str, Any]:
    body = node(name, "")
    del body["metadata"]["labels"]["rack"]
    body["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    return body


async def cycle(objects: list[dict[str, Any]]) -> tuple[FakeApi, dict[str, Any]]:
    api = FakeApi()
    await settled_cycle(Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                                  clock=lambda: 1000.0))
    patches = [b for m, p, b in api.calls if p.endswith("/networktopologies/default/status")]
    status = json.loads(json.dumps(patches[-1]["status"])) if patches else {}
    return api, status


def degraded(status: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == "Degraded")


def warnings(api: FakeApi) -> list[str]:
    return [b["message"] for m, p, b in api.calls
            if p.endswith("/events") and b["reason"] == "Degraded" and b["type"] == "Warning"]


async def test_a_level_no_node_carries_and_one_some_lack_are_named_with_counts() -> None:
    nodes = [node("n0", "r0"), node("n1", "r0"), node("n2", "r1")]
    del nodes[2]["metadata"]["labels"]["rack"]
    topology = with_levels(("block", "spine"), ("rack", "rack"), ("host", "kubernetes.io/hostname"))
    api, status = await cycle([*nodes, cpu_node("control-plane"), topology, QUEUE])
    condition = degraded(status)
    assert condition["status"] == "True" and condition["reason"] == "NodesWithoutLevelLabels"
    # The CPU-only node is not counted: it needs no network topology.
    assert condition["message"].startswith(
        "level block: no node has any of its labels (spine); "
        "level rack: 1 of 3 nodes have none of its labels (rack)")
    assert warnings(api) == [condition["message"]]

    # The object now says so (a restarted operator, or the next cycle): no second Warning.
    topology["status"] = status
    again, _ = await cycle([*nodes, cpu_node("control-plane"), topology, QUEUE])
    assert warnings(again) == []


async def test_a_topology_every_gpu_node_fits_is_not_degraded_and_warns_nothing() -> None:
    nodes = [node("n0", "r0"), node("n1", "r1"), cpu_node("control-plane")]
    api, status = await cycle([*nodes, TOPOLOGY, QUEUE])
    condition = degraded(status)
    assert condition["status"] == "False" and condition["reason"] == "AllNodesLabelled"
    assert warnings(api) == []


async def test_more_unlabelled_nodes_update_the_condition_not_the_warnings() -> None:
    """Nodes joining without a rack label move the count in the condition; only a level
    that no node carries any more (or a new lacking level) is a new Warning."""
    nodes = [node("n0", "r0"), node("n1", "r0"), node("n2", "r1")]
    del nodes[2]["metadata"]["labels"]["rack"]
    topology = copy.deepcopy(TOPOLOGY)
    api, clock = FakeApi(), [1000.0]
    scheduler = Scheduler(ClusterCache.from_objects([*nodes, topology, QUEUE]), api,
                          Settings(), clock=lambda: clock[0])
    said = []
    for step in range(3):
        if step:
            unlabelled = node(f"m{step}", "")
            del unlabelled["metadata"]["labels"]["rack"]
            nodes.append(unlabelled)
        api.calls.clear()
        clock[0] += 1
        scheduler.cache = ClusterCache.from_objects([*nodes, topology, QUEUE])
        await settled_cycle(scheduler)
        patches = [b for m, p, b in api.calls if p.endswith("/networktopologies/default/status")]
        topology["status"] = json.loads(json.dumps(patches[-1]["status"]))
        said.append((degraded(topology["status"])["message"].split(";")[0], warnings(api)))
    assert [message for message, _ in said] == [
        "level rack: 1 of 3 nodes have none of its labels (rack)",
        "level rack: 2 of 4 nodes have none of its labels (rack)",
        "level rack: 3 of 5 nodes have none of its labels (rack)"]
    assert [len(posted) for _, posted in said] == [1, 0, 0]

    for labelled in nodes[:2]:  # now no node has a rack: that is news
        del labelled["metadata"]["labels"]["rack"]
    api.calls.clear()
    scheduler.cache = ClusterCache.from_objects([*nodes, topology, QUEUE])
    await settled_cycle(scheduler)
    assert [w.split(";")[0] for w in warnings(api)] == [
        "level rack: no node has any of its labels (rack)"]
