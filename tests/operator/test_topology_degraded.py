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
