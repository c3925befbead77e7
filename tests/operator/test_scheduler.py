"""A whole operator cycle on a fake API: writes only on change, plans finished, partial gangs."""

from __future__ import annotations

import json
from typing import Any

from operator_fakes import QUEUE, TOPOLOGY, FakeApi, node, pod, podgroup, settled_cycle

from phalanx.config import Settings
from phalanx.core.model.names import PLAN_ANNOTATION
from phalanx.operator.cache import ClusterCache
from phalanx.operator.plans import Plan, decode_plan
from phalanx.operator.scheduler import Scheduler


def gpu_pod(name: str, **kw: Any) -> dict[str, Any]:
    body = pod(name, **kw)
    body["spec"]["containers"] = [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]
    return body


def cluster(*objects: dict[str, Any]) -> list[dict[str, Any]]:
    return [node("n0", "r0"), node("n1", "r0"), node("n2", "r1"), node("n3", "r1"),
            TOPOLOGY, QUEUE, *objects]


def echo_writes(api: FakeApi, objects: list[dict[str, Any]]) -> None:
    """Play the watch: apply our status patches and bindings to the cached objects."""
    by_path = {}
    for body in objects:
        meta = body["metadata"]
        by_path[(body["kind"], meta.get("namespace"), meta["name"])] = body
    for _method, path, payload in api.calls:
        parts = path.strip("/").split("/")
        if path.endswith("/status") and parts[-3] == "pods":  # a strategic merge by type
            target = by_path[("Pod", parts[-4], parts[-2])].setdefault("status", {})
            merged = {c["type"]: c for c in target.get("conditions") or []}
            merged |= {c["type"]: c for c in payload["status"]["conditions"]}
            target["conditions"] = json.loads(json.dumps(list(merged.values())))
        elif path.endswith("/status"):
            kind = {"podgroups": "PodGroup", "queues": "Queue",
                    "networktopologies": "NetworkTopology"}[parts[-3]]
            namespace = parts[parts.index("namespaces") + 1] if "namespaces" in parts else None
            by_path[(kind, namespace, parts[-2])]["status"] = json.loads(json.dumps(
                payload["status"]))
        elif path.endswith("/binding"):
            target = by_path[("Pod", payload["metadata"]["namespace"], payload["metadata"]["name"])]
            target["spec"]["nodeName"] = payload["target"]["name"]


def pods_start_running(api: FakeApi, objects: list[dict[str, Any]]) -> None:
    """The watch shows our writes, and the kubelet starts every bound pod."""
    echo_writes(api, objects)
    for body in objects:
        if body["kind"] == "Pod" and body["spec"].get("nodeName"):
            body["status"]["phase"] = "Running"


async def test_an_idle_cluster_causes_no_writes():
    objects = cluster(podgroup(min_member=2), gpu_pod("a"), gpu_pod("b"))
    api = FakeApi()
    scheduler = Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                          clock=lambda: 1000.0)
    await settled_cycle(scheduler)
    assert len(api.paths("POST")) >= 2  # the two bindings (and events)
    for _ in range(3):  # the watch shows our writes; pods start running
        pods_start_running(api, objects)
        api.calls.clear()
        await settled_cycle(scheduler)
    assert api.calls == []


def planned(body: dict[str, Any], plan: Plan) -> dict[str, Any]:
    """`body` bound with `plan` on its binding, as a crashed leader leaves its first pod."""
    body["metadata"].setdefault("annotations", {})[PLAN_ANNOTATION] = plan.annotation()
    return body


async def test_a_leftover_plan_is_finished_on_its_nodes_first():
    # the plan's node for b is in the other rack: placed afresh, b would join a in r1
    plan = Plan("old", "ns/g", {"ns/a": "n2", "ns/b": "n0"}, 990.0)
    objects = cluster(podgroup(min_member=2), planned(gpu_pod("a", node="n2"), plan),
                      gpu_pod("b"), podgroup("other", min_member=1), gpu_pod("c", group="other"))
    api = FakeApi()
    await settled_cycle(Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                                  clock=lambda: 1000.0))
    bindings = {(b["metadata"]["name"], b["target"]["name"])
                for m, p, b in api.calls if p.endswith("/binding")}
    assert ("b", "n0") in bindings
    assert ("c", "n0") not in bindings  # the plan's node was reserved before the cycle


async def test_a_plan_past_the_partial_grace_is_not_finished():
    """A plan older than `partial_grace_seconds` is history (its gang was given up for
    partly bound by then): the cycle places the pod, not the plan."""
    plan = Plan("old", "ns/g", {"ns/a": "n2", "ns/b": "n3"}, 1000.0 - 61)
    busy = gpu_pod("z", group="other", node="n3")
    objects = cluster(podgroup(min_member=2), podgroup("other", min_member=1),
                      planned(gpu_pod("a", node="n2"), plan), gpu_pod("b"), busy)
    api = FakeApi()
    await settled_cycle(Scheduler(ClusterCache.from_objects(objects), api,
                                  Settings(partial_grace_seconds=60), clock=lambda: 1000.0))
    targets = {b["metadata"]["name"]: b["target"]["name"]
               for m, p, b in api.calls if p.endswith("/binding")}
    assert targets.get("b") not in (None, "n3")  # n3 is full: only the stale plan said it


def quarter_pod(name: str, **kw: Any) -> dict[str, Any]:
    body = pod(name, **kw)
    body["metadata"]["annotations"] = {"scheduling.phalanx.io/gpu-fraction": "0.25"}
    body["spec"]["containers"] = [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]
    return body


async def test_a_leftover_plan_is_finished_with_the_gpu_devices_it_recorded():
    """The operator died after binding a (device 5 of n3, written on it) and before b:
    the next one binds b with the device the plan recorded (2), not one chosen afresh (a
    fresh choice packs b onto a's device, or takes any other node)."""
    plan = Plan("old", "ns/g", {"ns/a": "n3", "ns/b": "n3"}, 990.0,
                {"ns/a": "5", "ns/b": "2"})
    bound = planned(quarter_pod("a", node="n3"), plan)
    bound["metadata"]["annotations"]["scheduling.phalanx.io/gpu-index"] = "5"
    objects = cluster(podgroup(min_member=2), bound, quarter_pod("b"))
    api = FakeApi()
    await settled_cycle(Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                                  clock=lambda: 1000.0))
    bindings = {b["metadata"]["name"]: (b["target"]["name"], b["metadata"].get("annotations"))
                for m, p, b in api.calls if p.endswith("/binding")}
    assert bindings == {"b": ("n3", {"scheduling.phalanx.io/gpu-index": "2"})}


async def test_a_plan_whose_node_is_gone_is_dropped_and_the_rest_replanned():
    plan = Plan("old", "ns/g", {"ns/a": "n2", "ns/b": "gone-node"}, 990.0)
    objects = cluster(podgroup(min_member=2), planned(gpu_pod("a", node="n2"), plan),
                      gpu_pod("b"))
    api = FakeApi()
    await settled_cycle(Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                                  clock=lambda: 1000.0))
    targets = {b["target"]["name"] for m, p, b in api.calls if p.endswith("/binding")}
    assert len(targets) == 1 and "gone-node" not in targets


async def run_partial(controller: bool) -> FakeApi:
    group = podgroup(min_member=3, status={"phase": "Inqueue"})
    objects = cluster(group, gpu_pod("a", node="n0", controller=controller),
                      gpu_pod("b", node="n1", controller=controller), gpu_pod("c"))
    objects[0]["status"]["allocatable"]["nvidia.com/gpu"] = "8"
    for name in ("n2", "n3"):  # no room left for the third pod
        objects.append(gpu_pod(f"x-{name}", group=None, node=name, scheduler="default-scheduler"))
    api = FakeApi()
    clock = [0.0]
    scheduler = Scheduler(ClusterCache.from_objects(objects), api,
                          Settings(partial_grace_seconds=10), clock=lambda: clock[0])
    await settled_cycle(scheduler)
    assert api.paths("DELETE") == []
    clock[0] = 11.0
    await settled_cycle(scheduler)
    return api


async def test_a_partial_gang_with_a_controller_is_released_after_its_deadline():
    api = await run_partial(controller=True)
    assert sorted(api.paths("DELETE")) == ["/api/v1/namespaces/ns/pods/a",
                                           "/api/v1/namespaces/ns/pods/b"]


async def test_a_partial_gang_without_a_controller_is_left_alone_with_an_event():
    api = await run_partial(controller=False)
    assert api.paths("DELETE") == []
    reasons = [b["reason"] for m, p, b in api.calls if p.endswith("/events")]
    assert "PartialGang" in reasons


async def test_timeout_sets_the_reason_posts_one_event_and_backs_off():
    group = podgroup(min_member=3, scheduleTimeoutSeconds=5)
    group["metadata"]["creationTimestamp"] = "1970-01-01T00:00:00Z"
    objects = cluster(group, *(gpu_pod(f"p{i}") for i in range(3)))
    objects[0]["metadata"]["labels"]["rack"] = "r0"
    group["spec"]["topology"] = {"required": "host"}  # three 8-GPU pods never fit one host
    api = FakeApi()
    clock = [100.0]
    scheduler = Scheduler(ClusterCache.from_objects(objects), api,
                          Settings(backoff_initial_seconds=10), clock=lambda: clock[0])
    await settled_cycle(scheduler)
    status = next(b["status"] for m, p, b in api.calls if p.endswith("podgroups/g/status"))
    unschedulable = next(c for c in status["conditions"] if c["type"] == "Unschedulable")
    assert unschedulable["reason"] == "Timeout"
    events = [b["reason"] for m, p, b in api.calls if p.endswith("/events")]
    assert events.count("Timeout") == 1
    assert "ns/g" in scheduler.backoffs
    echo_writes(api, objects)
    api.calls.clear()
    clock[0] = 105.0  # inside the backoff: the group is not tried, nothing is written
    await settled_cycle(scheduler)
    assert [p for m, p, b in api.calls if "podgroups" in p] == []
    for later in (111.0, 132.0, 173.0):  # each backoff step retries: still one Timeout Event
        clock[0] = later
        await settled_cycle(scheduler)
    assert scheduler.backoffs["ns/g"].delay > 10
    assert [b["reason"] for m, p, b in api.calls if p.endswith("/events")].count("Timeout") == 0


async def test_a_restarted_operator_does_not_repeat_events_the_status_already_shows():
    """A new leader (or a restart) has no memory of the Events it posted; the conditions
    on the objects are that memory, so a settled cluster gets no new Events."""
    objects = cluster(podgroup("ok", min_member=2), gpu_pod("a", group="ok"),
                      gpu_pod("b", group="ok"),
                      podgroup("big", min_member=4), *[gpu_pod(f"big-{i}", group="big")
                                                       for i in range(4)])
    api = FakeApi()
    first = Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                      clock=lambda: 1000.0)
    await settled_cycle(first)
    assert any(path.endswith("/events") for path in api.paths("POST"))
    pods_start_running(api, objects)
    api.calls.clear()
    await settled_cycle(first)  # Running now: the status changes, nothing new to announce
    echo_writes(api, objects)
    api.calls.clear()
    # Within the reservation "big" got for waiting long (status.nominated, 300 s): a restart
    # reads it back and keeps it, so nothing is new.
    restarted = Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                          clock=lambda: 1100.0)
    await settled_cycle(restarted)
    assert [p for p in api.paths("POST") if p.endswith("/events")] == []


async def test_a_gang_admitted_and_placed_in_one_cycle_gets_one_event_saying_both():
    objects = cluster(podgroup(min_member=2), gpu_pod("a"), gpu_pod("b"))
    api = FakeApi()
    await settled_cycle(Scheduler(ClusterCache.from_objects(objects), api, Settings()))
    events = [b for m, p, b in api.calls if p.endswith("/events")]
    assert [e["reason"] for e in events] == ["Scheduled"]
    assert "admitted" in events[0]["message"].lower()


async def test_a_gang_whose_pods_are_still_arriving_gets_no_status_until_the_grace_ends():
    group = podgroup(min_member=3)
    group["metadata"]["creationTimestamp"] = "1970-01-01T00:16:40Z"  # 1000.0
    objects = cluster(group, gpu_pod("a"), gpu_pod("b"))  # the third pod is not there yet
    api, clock = FakeApi(), [1001.0]
    scheduler = Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                          clock=lambda: clock[0])
    await settled_cycle(scheduler)
    assert [p for m, p, b in api.calls if "podgroups" in p or p.endswith("/events")] == []
    clock[0] = 1020.0  # past the grace: still short of pods, now that is news
    await settled_cycle(scheduler)
    status = next(b["status"] for m, p, b in api.calls if p.endswith("podgroups/g/status"))
    assert status["phase"] == "Pending"
    events = [(b["involvedObject"]["name"], b["reason"]) for m, p, b in api.calls
              if p.endswith("/events")]
    # The group says it, and each waiting pod says it too (as kube-scheduler's pods do).
    assert sorted(events) == [("a", "FailedScheduling"), ("b", "FailedScheduling"),
                              ("g", "GangIncomplete")]
    conditions = [b["status"]["conditions"][0] for m, p, b in api.calls
                  if p.endswith("/pods/a/status")]
    assert [(c["type"], c["status"], c["reason"]) for c in conditions] == [
        ("PodScheduled", "False", "Unschedulable")]
    assert conditions[0]["message"].startswith("PodGroup g (GangIncomplete): ")


async def test_a_placed_gangs_plan_rides_on_its_first_binding():
    """A crash between two bindings is recoverable, at no write of its own: the plan is
    on the gang's first binding (the API server copies it onto the pod)."""
    objects = cluster(podgroup(min_member=2), gpu_pod("a"), gpu_pod("b"))
    api = FakeApi()
    scheduler = Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                          clock=lambda: 1000.0)
    await settled_cycle(scheduler)
    bindings = [b for m, p, b in api.calls if p.endswith("/binding")]
    assert len(bindings) == 2
    first, second = bindings
    plan = decode_plan(first)
    assert plan is not None and plan.group == "ns/g" and set(plan.pods) == {"ns/a", "ns/b"}
    assert plan.uids == {"ns/a": "uid-a", "ns/b": "uid-b"}
    assert PLAN_ANNOTATION not in (second["metadata"].get("annotations") or {})
    statuses = [b["status"] for m, p, b in api.calls if p.endswith("/podgroups/g/status")]
    assert statuses and all("plan" not in status for status in statuses)
    assert [p for m, p, b in api.calls if p.endswith("/podgroups/g")] == []  # no metadata write


def upstream_group(min_count: int, **annotations: str) -> dict[str, Any]:
    """Kubernetes' own PodGroup, once said to be scheduled (as a placed gang is)."""
    scheduled = {"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled",
                 "message": "placed", "lastTransitionTime": "2026-01-01T00:00:00Z",
                 "observedGeneration": 1}
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
            "metadata": {"name": "up", "namespace": "ns", "uid": "uid-up", "generation": 1,
                         "annotations": annotations},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
            "status": {"conditions": [scheduled]}}


def upstream_member(name: str, node: str | None = None) -> dict[str, Any]:
    body = gpu_pod(name, node=node, group=None, controller=True, phase="Running" if node else
                   "Pending")
    body["spec"]["schedulingGroup"] = {"podGroupName": "up"}
    return body


async def test_a_partial_upstream_gang_is_released_after_its_timeout_and_says_so():
    timeout = {"scheduling.phalanx.io/schedule-timeout-seconds": "30"}
    objects = cluster(upstream_group(3, **timeout), upstream_member("a", "n0"),
                      upstream_member("b", "n1"), upstream_member("c"))
    for name in ("n2", "n3"):  # no room left for the third pod
        objects.append(gpu_pod(f"x-{name}", group=None, node=name, scheduler="default-scheduler"))
    api = FakeApi()
    clock = [0.0]
    scheduler = Scheduler(ClusterCache.from_objects(objects), api,
                          Settings(partial_grace_seconds=10), clock=lambda: clock[0])
    await settled_cycle(scheduler)
    clock[0] = 29.0  # past the grace, not past the group's timeout
    await settled_cycle(scheduler)
    assert api.paths("DELETE") == []
    clock[0] = 31.0
    await settled_cycle(scheduler)
    assert sorted(api.paths("DELETE")) == ["/api/v1/namespaces/ns/pods/a",
                                           "/api/v1/namespaces/ns/pods/b"]
    [event] = [b for m, p, b in api.calls
               if p.endswith("/events") and b["reason"] == "PartialGangReleased"]
    assert event["involvedObject"]["apiVersion"] == "scheduling.k8s.io/v1alpha2"
    assert event["involvedObject"]["name"] == "up"
    *_, status = [b["status"] for m, p, b in api.calls
                  if p == "/apis/scheduling.k8s.io/v1alpha2/namespaces/ns/podgroups/up/status"]
    [said] = [c for c in status["conditions"] if c["type"] == "PodGroupScheduled"]
    assert (said["type"], said["status"], said["reason"]) == (
        "PodGroupScheduled", "False", "Unschedulable")
    assert said["message"] == event["message"]
