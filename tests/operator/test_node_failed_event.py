"""A gang's failed node is named once on its PodGroup (NodeFailed), not again each time the
numbers move (its pods evicted, a replacement bound) or the node's state moves on (NotReady,
then tainted, then deleted); a further failed node is news."""

from __future__ import annotations

from typing import Any

from operator_fakes import FakeApi, podgroup, settled_cycle
from test_scheduler import cluster, gpu_pod, upstream_group, upstream_member

from phalanx.config import Settings
from phalanx.operator.cache import ClusterCache
from phalanx.operator.scheduler import Scheduler


def node_failed(api: FakeApi) -> list[str]:
    return [b["message"] for m, p, b in api.calls
            if p.endswith("/events") and b["reason"] == "NodeFailed"]


def by_name(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


async def test_a_failed_node_is_named_once_per_cause_not_per_number() -> None:
    placement = {"nodes": ["n0", "n1"]}
    group = podgroup(min_member=2, status={"phase": "Running", "placement": placement})
    objects = cluster(group, gpu_pod("a", node="n0", phase="Running", controller=True),
                      gpu_pod("b", node="n1", phase="Running", controller=True))
    api, clock = FakeApi(), [1000.0]
    scheduler = Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                          clock=lambda: clock[0])

    async def cycle() -> list[str]:
        api.calls.clear()
        clock[0] += 1.0
        scheduler.cache = ClusterCache.from_objects(objects)
        await settled_cycle(scheduler)
        return node_failed(api)

    n1 = by_name(objects, "Node", "n1")
    n1["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    (first,) = await cycle()
    assert first.startswith("node n1 (NotReady) of this gang failed; 1 of 2 pods run on")

    # The node lifecycle controller taints it (and it may turn Ready again), then evicts
    # the pod; the controller makes a replacement that is bound elsewhere, while the
    # group's status still names the failed node. Same cause: nothing new to say.
    n1["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    n1["spec"] = {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]}
    assert await cycle() == []
    objects.remove(by_name(objects, "Pod", "b"))
    assert await cycle() == []
    objects.append(gpu_pod("b2", node="n2", phase="Running", controller=True))
    assert await cycle() == []
    objects.remove(n1)  # and the node is deleted
    assert await cycle() == []

    # Another node of the gang fails: that is news.
    by_name(objects, "Node", "n0")["status"]["conditions"] = [
        {"type": "Ready", "status": "False"}]
    (second,) = await cycle()
    assert second.startswith("node n0 (NotReady), node n1 (deleted) of this gang failed")


async def test_a_kubernetes_podgroup_with_a_pod_on_a_failed_node_is_told_too() -> None:
    """Kubernetes' own PodGroup has no placement in its status: the node is named from the
    gang's pod still on it."""
    members = [upstream_member("a", "n0"), upstream_member("b", "n1")]
    objects = cluster(upstream_group(2), *members)
    by_name(objects, "Node", "n1")["status"]["conditions"] = [
        {"type": "Ready", "status": "False"}]
    api = FakeApi()
    scheduler = Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                          clock=lambda: 1000.0)
    await settled_cycle(scheduler)
    (event,) = [b for m, p, b in api.calls
                if p.endswith("/events") and b["reason"] == "NodeFailed"]
    assert event["involvedObject"]["name"] == "up"
    assert event["message"].startswith("node n1 (NotReady) of this gang failed")
