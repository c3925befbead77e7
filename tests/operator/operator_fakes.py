"""A fake API server reply log for the writer's unit tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from phalanx.operator.kube.client import JSON, Reply


class FakeApi:
    """Records requests; `fail(path_part)` makes matching requests answer an error."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.failures: list[tuple[Callable[[str, str], bool], int]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.delay = 0.001  # seconds each request takes; 0: replies in the order sent

    def fail(self, predicate: Callable[[str, str], bool], status: int = 404) -> None:
        self.failures.append((predicate, status))

    async def request(self, method: str, path: str, body: Any = None,
                      content_type: str = JSON) -> Reply:
        import asyncio

        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(self.delay)
        self.in_flight -= 1
        self.calls.append((method, path, body))
        for predicate, status in self.failures:
            if predicate(method, path):
                return Reply(status, {"reason": "NotFound" if status == 404 else "Conflict"})
        return Reply(201 if method == "POST" else 200, {})

    def paths(self, method: str) -> list[str]:
        return [path for m, path, _ in self.calls if m == method]


def pod(name: str, namespace: str = "ns", node: str | None = None, group: str | None = "g",
        gated: bool = False, phase: str = "Pending", controller: bool = False,
        scheduler: str = "phalanx", **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                            "labels": {"scheduling.phalanx.io/pod-group": group} if group else {}}
    if controller:
        meta["ownerReferences"] = [{"kind": "Job", "name": "j", "uid": "j", "controller": True}]
    body_spec: dict[str, Any] = {"schedulerName": scheduler, **spec}
    if node:
        body_spec["nodeName"] = node
    if gated:
        body_spec["schedulingGates"] = [{"name": "scheduling.phalanx.io/gang"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body_spec,
            "status": {"phase": phase}}


def gpu_pod(name: str, group: str, node_name: str | None = None,
            started: str | None = None) -> dict[str, Any]:
    """A pod of `group` asking for a whole 8-GPU node, running there from `started`."""
    body = pod(name, group=group, node=node_name, phase="Running" if node_name else "Pending")
    body["spec"]["containers"] = [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]
    if started:
        body["status"]["startTime"] = started
    return body


def podgroup(name: str = "g", namespace: str = "ns", min_member: int = 2,
             status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                         "generation": 1},
            "spec": {"minMember": min_member, **spec}, "status": status or {}}


# A small two-rack cluster shared by the whole-cycle tests.
TOPOLOGY = {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "NetworkTopology",
            "metadata": {"name": "default"}, "spec": {"levels": [
                {"name": "rack", "nodeLabels": ["rack"]},
                {"name": "host", "nodeLabels": ["kubernetes.io/hostname"]}]}}
QUEUE = {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "Queue",
         "metadata": {"name": "default"}, "spec": {}}


def node(name: str, rack: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "rack": rack}},
            "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "64", "memory": "512Gi",
                                       "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


async def settled_cycle(scheduler: Any) -> Any:
    """One operator cycle and the writes it started (they run in the background)."""
    result = await scheduler.cycle()
    await scheduler.settle()
    return result


async def serve_get(path: str, handler: Any) -> tuple[str, Any]:
    """A local HTTP server answering GET `path` with `handler` (an aiohttp handler), on a
    free port: its address, and the runner to `cleanup()` at the end."""
    from aiohttp import web

    app = web.Application()
    app.router.add_get(path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return f"http://127.0.0.1:{port}", runner
