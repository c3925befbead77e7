"""Time on a full cluster (#31) on the real control plane (32 kwok nodes of 8 GPUs): a gang
whose pods run past its runtime limit is stopped through the Eviction API, with the Event
and the condition RuntimeLimitExceeded; a gang waiting behind work with a limit shows when
it is expected to start (status.expectedStart, the Expected-Start column of kubectl get pg).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from operator_e2e import (
    FAST,
    apply,
    condition,
    events_for,
    eventually,
    gang,
    group_of,
    members,
    pods_in,
)

from operator_thread import operator_in_thread
from phalanx.cluster import LocalCluster
from phalanx.operator.kube.client import load_configuration
from phalanx.operator.main import Operator
from pod_history import PodHistory

pytestmark = pytest.mark.e2e

NODES = 32
LIMIT_SECONDS = 5


def moment(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@pytest.fixture
def estimating(ready_nodes: LocalCluster) -> Iterator[Operator]:
    """The operator under test, estimating starts every second (not every 30 s)."""
    settings = FAST.model_copy(update={"estimate_interval_seconds": 1.0})

    async def make() -> Operator:
        return Operator(await load_configuration(str(ready_nodes.kubeconfig)), settings)

    with operator_in_thread(make, "phalanx-operator") as operator:
        yield operator
    assert operator.loop.errors == 0


async def test_a_gang_past_its_runtime_limit_is_evicted_with_its_event_and_condition(
    cluster: LocalCluster, namespace: str, phalanx: Operator, tmp_path: Path,
) -> None:
    history = PodHistory(cluster, namespace, tmp_path / "pods.json")
    try:
        await apply(cluster, gang("limited", 2, gpus=8, runtimeLimitSeconds=LIMIT_SECONDS),
                    namespace)

        async def gone() -> bool:
            return not members(await pods_in(cluster, namespace), "limited")

        await eventually(gone, 90)  # ran, then evicted; kwok removes the pods
    finally:
        history.stop()

    # the gang started when its first pod did (kwok may start the other a second later)
    started = min(next(v["status"]["startTime"] for v in history.versions(name)
                       if v["status"].get("startTime")) for name in ("limited-0", "limited-1"))
    for name in ("limited-0", "limited-1"):
        seen = history.versions(name)
        marked = [(i, c) for i, v in enumerate(seen) for c in v["status"].get("conditions", [])
                  if c["type"] == "DisruptionTarget"]
        deleting = [i for i, v in enumerate(seen) if v["metadata"].get("deletionTimestamp")]
        assert marked and deleting and marked[0][0] < deleting[0], (name, seen)
        target = marked[0][1]
        assert target["reason"] == "PreemptionByScheduler", target
        assert target["message"].startswith(
            f"phalanx: ran past its runtime limit of {LIMIT_SECONDS}s"), target
        ran = moment(target["lastTransitionTime"]) - moment(started)
        assert LIMIT_SECONDS <= ran <= LIMIT_SECONDS + 10, (started, target)
        # the Eviction API, not a deletion: the API server says so on the pod
        assert any(c["type"] == "DisruptionTarget" and c["reason"] == "EvictionByEvictionAPI"
                   for v in seen for c in v["status"].get("conditions", [])), seen

    async def limited() -> dict[str, Any] | None:
        group = await group_of(cluster, namespace, "limited")
        exceeded = condition(group, "RuntimeLimitExceeded")
        return group if exceeded.get("status") == "True" and (
            group["status"].get("phase") == "Failed") else None

    group = await eventually(limited, 30)
    exceeded = condition(group, "RuntimeLimitExceeded")
    assert exceeded["reason"] == "RuntimeLimitExceeded"
    assert exceeded["message"].startswith(f"ran past its runtime limit of {LIMIT_SECONDS}s")

    async def said() -> dict[str, Any] | None:
        found = [e for e in await events_for(cluster, namespace, "limited")
                 if e["reason"] == "RuntimeLimitExceeded"]
        return found[0] if found else None

    event = await eventually(said, 30)
    assert event["type"] == "Warning"
    assert event["message"] == f"2 pods evicted: {exceeded['message']}", event
    sample = phalanx.metrics.registry.get_sample_value
    assert sample("phalanx_evictions_total", {"reason": "RuntimeLimitExceeded"}) == 2


async def test_a_gang_waiting_behind_limited_work_shows_when_it_is_expected_to_start(
    cluster: LocalCluster, namespace: str, estimating: Operator,
) -> None:
    await apply(cluster, gang("big", NODES, gpus=8, runtimeLimitSeconds=3600), namespace)

    async def running() -> list[str] | None:
        pods = await pods_in(cluster, namespace)
        starts = [p["status"].get("startTime") for n, p in pods.items() if n.startswith("big-")
                  and p["status"].get("phase") == "Running"]
        return starts if len(starts) == NODES and all(starts) else None

    starts = await eventually(running, 120)
    await apply(cluster, gang("next", 4, gpus=8), namespace)

    async def expected() -> dict[str, Any] | None:
        status = (await group_of(cluster, namespace, "next")).get("status") or {}
        found = status.get("expectedStart")
        return found if found and found.get("at") else None

    found = await eventually(expected, 60)
    assert moment(found["at"]) == min(moment(s) for s in starts) + 3600, (found, starts)
    assert found["waitsFor"] == [f"{namespace}/big"]
    assert found["message"].startswith("expected to start by"), found
    table = await asyncio.to_thread(cluster.kubectl, "get", "podgroups.scheduling.phalanx.io",
                                    "-n", namespace)
    header, *rows = table.stdout.splitlines()
    assert "EXPECTED-START" in header.split(), header
    (row,) = [r for r in rows if r.split()[0] == "next"]
    assert found["at"] in row.split(), table.stdout
