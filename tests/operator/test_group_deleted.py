"""A PodGroup deleted while its gang is being bound: the bindings are not undone (they
cannot be), and the log and an Event on each pod say what was done."""

from __future__ import annotations

import asyncio
from typing import Any

from operator_fakes import QUEUE, TOPOLOGY, FakeApi, node, pod, podgroup
from structlog.testing import capture_logs

from phalanx.config import Settings
from phalanx.operator.cache import KIND_OF, ClusterCache, Kind, object_key
from phalanx.operator.kube.client import JSON, Reply
from phalanx.operator.scheduler import Scheduler


class HeldBindings(FakeApi):
    """Bindings wait until `release` is set; `binding` is set when the first one arrives."""

    def __init__(self) -> None:
        super().__init__()
        self.binding = asyncio.Event()
        self.release = asyncio.Event()

    async def request(self, method: str, path: str, body: Any = None,
                      content_type: str = JSON) -> Reply:
        if path.endswith("/binding"):
            self.binding.set()
            await self.release.wait()
        return await super().request(method, path, body, content_type)


def gpu_pod(name: str) -> dict[str, Any]:
    body = pod(name)
    body["spec"]["containers"] = [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]
    return body


async def test_a_group_deleted_mid_binding_is_logged_and_its_pods_told() -> None:
    objects = [node("n0", "r0"), node("n1", "r0"), TOPOLOGY, QUEUE,
               podgroup(min_member=2), gpu_pod("a"), gpu_pod("b")]
    stores: dict[Kind, dict[Any, list[dict[str, Any]]]] = {kind: {} for kind in Kind}
    for body in objects:
        stores[KIND_OF[body["kind"]]][object_key(body)] = [body]
    api = HeldBindings()
    scheduler = Scheduler(ClusterCache(stores), api, Settings(), clock=lambda: 1000.0)
    with capture_logs() as logs:
        await scheduler.cycle()
        async with asyncio.timeout(30):  # a guard against a hang, not a measurement
            await api.binding.wait()
        del stores[Kind.POD_GROUP]["ns/g"]  # the watch shows the group deleted
        api.release.set()
        await scheduler.settle()

    bindings = [p for m, p, _ in api.calls if p.endswith("/binding")]
    assert len(bindings) == 2  # the plan was finished: a binding cannot be undone
    gone = [entry for entry in logs if entry["event"] == "group deleted while its gang was "
            "being placed"]
    assert [(e["group"], e["bound"], e["not_bound"]) for e in gone] == [("ns/g", 2, 0)]
    events = {b["involvedObject"]["name"]: b for m, p, b in api.calls if p.endswith("/events")
              and b["reason"] == "GroupDeleted"}
    assert set(events) == {"a", "b"}
    assert events["a"]["type"] == "Warning" and events["a"]["involvedObject"]["kind"] == "Pod"
    assert "PodGroup g was deleted while its gang was being placed: 2 of 2 pods were bound" in (
        events["a"]["message"])
    assert "this pod was bound to n" in events["a"]["message"]
