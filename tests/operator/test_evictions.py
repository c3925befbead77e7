"""The operator carries out the core's evictions on a fake API: the DisruptionTarget
condition first, then the Eviction API (a budget's refusal stops the whole victim group and
reaches the next snapshot), never twice for one pod, status.nominated, Events, metrics;
and `kubectl phalanx explain` of a preemptor shows the victims and the room held."""

from __future__ import annotations

from typing import Any

from operator_fakes import (
    QUEUE,
    TOPOLOGY,
    FakeApi,
    gpu_pod,
    node,
    podgroup,
    settled_cycle,
)

from phalanx.config import EvictionMode, Preemption, Settings
from phalanx.core.cycle import run_cycle
from phalanx.core.model.config import SchedulerConfig
from phalanx.core.parse import parse_pod_group, snapshot_from_objects
from phalanx.kubectl.explain import explain_group
from phalanx.operator.cache import ClusterCache
from phalanx.operator.scheduler import Scheduler

NOW = 10_000.0


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value}


def full_cluster() -> list[dict[str, Any]]:
    """Two racks of two 8-GPU nodes, each rack full with a low gang (low-b started last);
    a high gang of two whole nodes, required in one rack, arrives."""
    return [
        node("n0", "r0"), node("n1", "r0"), node("n2", "r1"), node("n3", "r1"),
        TOPOLOGY, QUEUE, priority_class("low", 10), priority_class("high", 1000),
        podgroup("low-a", min_member=2, priorityClassName="low"),
        gpu_pod("low-a-0", "low-a", "n0", "2026-01-01T00:00:00Z"),
        gpu_pod("low-a-1", "low-a", "n1", "2026-01-01T00:00:00Z"),
        podgroup("low-b", min_member=2, priorityClassName="low"),
        gpu_pod("low-b-0", "low-b", "n2", "2026-01-01T01:00:00Z"),
        gpu_pod("low-b-1", "low-b", "n3", "2026-01-01T01:00:00Z"),
        recent(podgroup("high", min_member=2, priorityClassName="high",
                        topology={"required": "rack"})),
        gpu_pod("high-0", "high"), gpu_pod("high-1", "high"),
    ]


def recent(group: dict[str, Any]) -> dict[str, Any]:
    """Created 10 s before NOW: not starving (no reservation of its own)."""
    group["metadata"]["creationTimestamp"] = "1970-01-01T02:46:30Z"
    return group


def scheduler(objects: list[dict[str, Any]], api: FakeApi, **preemption: Any) -> Scheduler:
    settings = Settings(preemption=Preemption(**preemption))
    return Scheduler(ClusterCache.from_objects(objects), api, settings, clock=lambda: NOW)


def calls(api: FakeApi, method: str, part: str) -> list[tuple[str, Any]]:
    return [(path, body) for m, path, body in api.calls if m == method and part in path]


def evicted(api: FakeApi) -> list[str]:
    """Pods evicted for real (not dry runs)."""
    return sorted(path.split("/")[-2] for path, body in calls(api, "POST", "/eviction")
                  if not body["deleteOptions"].get("dryRun"))


def events(api: FakeApi) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for _, body in calls(api, "POST", "/events"):
        found.setdefault(body["involvedObject"]["name"], []).append(body)
    return found


def group_status(api: FakeApi, name: str) -> dict[str, Any]:
    return calls(api, "PATCH", f"podgroups/{name}/status")[-1][1]["status"]


async def test_exactly_the_needed_gang_is_evicted_condition_first_then_the_eviction_api():
    api = FakeApi()
    result = await settled_cycle(scheduler(full_cluster(), api))
    assert sorted(e.pod for e in result.evictions) == ["ns/low-b-0", "ns/low-b-1"]
    assert evicted(api) == ["low-b-0", "low-b-1"]
    assert not [p for p in api.paths("POST") if p.endswith("/binding")]  # room still taken
    order = [(m, path.split("/")[-2], path.split("/")[-1]) for m, path, _ in api.calls
             if "/pods/low-b-0/" in path]
    assert order == [("POST", "low-b-0", "eviction"), ("PATCH", "low-b-0", "status"),
                     ("POST", "low-b-0", "eviction")]  # dry run, condition, eviction
    patch = calls(api, "PATCH", "pods/low-b-0/status")[0][1]
    (target,) = patch["status"]["conditions"]
    assert (target["type"], target["status"], target["reason"]) == (
        "DisruptionTarget", "True", "PreemptionByScheduler")
    assert "ns/high" in target["message"] and "1000" in target["message"]
    posted = next(body for path, body in calls(api, "POST", "/eviction")
                  if "low-b-0" in path and not body["deleteOptions"].get("dryRun"))
    assert posted["apiVersion"] == "policy/v1" and posted["kind"] == "Eviction"
    assert posted["deleteOptions"]["preconditions"] == {"uid": "uid-low-b-0"}

    said = events(api)
    (preempted,) = [e for e in said["low-b"] if e["reason"] in ("Preempted", "Reclaimed")]
    assert (preempted["type"], preempted["reason"]) == ("Warning", "Preempted")
    assert preempted["message"].startswith("2 pods evicted: preempted by ns/high (priority 1000)")
    (preempting,) = [e for e in said["high"] if e["reason"] == "Preempting"]
    assert preempting["type"] == "Normal"
    assert "2 pods of 1 group (ns/low-b" in preempting["message"]
    assert [e for e in said["low-a"] if e["reason"] in ("Preempted", "Reclaimed")] == []

    nominated = group_status(api, "high")["nominated"]
    assert (sorted(nominated["nodes"]), nominated["reason"]) == (["n2", "n3"], "Preempting")


async def test_a_pod_being_evicted_is_not_evicted_again_while_the_watch_lags():
    api = FakeApi()
    objects = full_cluster()
    running = scheduler(objects, api)
    await settled_cycle(running)
    assert len(evicted(api)) == 2
    api.calls.clear()
    result = await settled_cycle(running)  # the cache still shows the victims running
    assert evicted(api) == [] and calls(api, "POST", "/eviction") == []
    assert result.evictions == ()
    sample = running.metrics.registry.get_sample_value
    assert sample("phalanx_evictions_total", {"reason": "Preempted"}) == 2
    assert sample("phalanx_evicted_gpus_total", {"reason": "Preempted"}) == 16


async def test_the_hold_stays_while_its_status_write_is_not_seen_yet():
    """The watch shows the victims leaving but not yet the preemptor's status.nominated:
    the core still sees the hold (it starts none for a gang only waiting for terminating
    pods), so the room stays held and the status keeps saying so."""
    api = FakeApi()
    objects = full_cluster()
    running = scheduler(objects, api)
    await settled_cycle(running)
    for body in objects:
        if body["metadata"]["name"].startswith("low-b-"):
            body["metadata"]["deletionTimestamp"] = "1970-01-01T02:46:40Z"
    api.calls.clear()
    result = await settled_cycle(running)
    decision = result.decision("ns/high")
    assert decision is not None and decision.nomination is not None
    assert (sorted(decision.nomination.nodes), decision.nomination.since) == (["n2", "n3"], NOW)
    assert calls(api, "PATCH", "podgroups/high/status") == [] or group_status(
        api, "high")["nominated"]["reason"] == "Preempting"
    assert evicted(api) == []


async def test_a_refused_eviction_stops_the_group_and_the_core_picks_another_victim():
    api = FakeApi()
    api.fail(lambda method, path: method == "POST" and "/pods/low-b-1/eviction" in path, 429)
    running = scheduler(full_cluster(), api)
    await settled_cycle(running)
    assert evicted(api) == []  # the dry run found low-b-1 protected: low-b stays whole
    assert calls(api, "PATCH", "pods/low-b") == []
    (refused,) = [e for e in events(api)["high"] if e["reason"] == "EvictionRefused"]
    assert "ns/low-b" in refused["message"] and refused["type"] == "Warning"
    assert running.evicting.refused_lately() == {"ns/low-b-1"}
    api.calls.clear()
    result = await settled_cycle(running)  # the refusal is in the snapshot: low-a instead
    assert sorted(e.pod for e in result.evictions) == ["ns/low-a-0", "ns/low-a-1"]
    assert evicted(api) == ["low-a-0", "low-a-1"]
    assert running.metrics.registry.get_sample_value("phalanx_evictions_refused_total") == 1


async def test_delete_mode_deletes_the_victims_after_the_condition():
    api = FakeApi()
    await settled_cycle(scheduler(full_cluster(), api, eviction=EvictionMode.DELETE))
    assert calls(api, "POST", "/eviction") == []
    assert sorted(p.split("/")[-1] for p, _ in calls(api, "DELETE", "/pods/")) == [
        "low-b-0", "low-b-1"]
    assert len(calls(api, "PATCH", "pods/low-b-0/status")) == 1


async def test_the_hold_is_read_back_from_status_nominated():
    api = FakeApi()
    await settled_cycle(scheduler(full_cluster(), api))
    written = group_status(api, "high")
    group = podgroup("high", min_member=2, status={"nominated": written["nominated"]})
    nomination = parse_pod_group(group).nomination
    assert nomination is not None
    assert (sorted(nomination.nodes), nomination.reason) == (["n2", "n3"], "Preempting")
    assert nomination.since == NOW
    assert nomination.expires == NOW + SchedulerConfig().nomination_timeout_seconds


async def test_the_victims_gone_the_preemptor_is_bound_in_the_held_room_and_the_hold_ends():
    api = FakeApi()
    objects = full_cluster()
    running = scheduler(objects, api)
    await settled_cycle(running)
    high = next(o for o in objects if o["kind"] == "PodGroup" and o["metadata"]["name"] == "high")
    high["status"] = group_status(api, "high")  # the watch shows the status written
    objects[:] = [o for o in objects if not o["metadata"]["name"].startswith("low-b-")]
    api.calls.clear()
    fresh = Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                      clock=lambda: NOW + 5)  # a new leader, even
    await settled_cycle(fresh)
    bindings = {path.split("/")[-2]: body["target"]["name"]
                for path, body in calls(api, "POST", "/binding")}
    assert bindings == {"high-0": "n2", "high-1": "n3"} or bindings == {
        "high-0": "n3", "high-1": "n2"}
    assert group_status(api, "high")["nominated"] is None
    assert evicted(api) == []


def test_explain_of_a_preemptor_names_its_victims_and_the_room_held():
    objects = full_cluster()
    high = next(o for o in objects if o["kind"] == "PodGroup" and o["metadata"]["name"] == "high")
    high["status"] = {"nominated": {"nodes": ["n2", "n3"], "reason": "Preempting",
                                    "since": "2026-12-01T04:00:00Z",
                                    "expires": "2026-12-01T04:05:00Z"}}
    snapshot = snapshot_from_objects(objects)
    text = explain_group(high, snapshot, run_cycle(snapshot, SchedulerConfig(), NOW))
    assert "Now: waits, Preempting: preempting: evicts 2 pods of 1 group (ns/low-b" in text
    assert "Would evict 2 pods: ns/low-b (Preempted): 2 pods" in text
    assert ("Room held for it: 2 nodes (Preempting since 2026-12-01T04:00:00Z, "
            "until 2026-12-01T04:05:00Z): n2, n3") in text


def test_explain_of_a_gang_that_may_not_preempt_says_why():
    objects = [*full_cluster(), priority_class("never", 1000)]
    objects[-1]["preemptionPolicy"] = "Never"
    high = next(o for o in objects if o["kind"] == "PodGroup" and o["metadata"]["name"] == "high")
    high["spec"]["priorityClassName"] = "never"
    snapshot = snapshot_from_objects(objects)
    text = explain_group(high, snapshot, run_cycle(snapshot, SchedulerConfig(), NOW))
    assert "preemption is off for it (preemptionPolicy Never)" in text
    assert "Would evict" not in text


async def test_every_victim_refused_the_preemptor_waits_and_its_status_says_why():
    api = FakeApi()
    api.fail(lambda method, path: method == "POST" and path.endswith("/eviction"), 429)
    running = scheduler(full_cluster(), api)
    for _ in range(3):  # low-b refused, then low-a, then nothing left to try
        result = await settled_cycle(running)
    assert result.evictions == ()
    decision = result.decision("ns/high")
    assert decision is not None and decision.nomination is None
    assert ("preemption cannot help: 4 pods may not be evicted now (PodDisruptionBudget)"
            in decision.message)
    unschedulable = next(c for c in group_status(api, "high")["conditions"]
                         if c["type"] == "Unschedulable")
    assert "PodDisruptionBudget" in unschedulable["message"]
    marked = [c for c in calls(api, "PATCH", "pods/") if not c[0].endswith("/status")]
    assert marked == []  # nothing marked, nothing evicted (a waiting pod's condition aside)


async def test_an_expired_hold_is_released_with_an_event_and_nothing_evicted_that_cycle():
    api = FakeApi()
    objects = full_cluster()
    high = next(o for o in objects if o["kind"] == "PodGroup" and o["metadata"]["name"] == "high")
    high["status"] = {"nominated": {"nodes": ["n2", "n3"], "reason": "Preempting",
                                    "since": "1970-01-01T02:40:00Z",
                                    "expires": "1970-01-01T02:45:00Z"}}  # before NOW
    await settled_cycle(scheduler(objects, api))
    assert evicted(api) == []
    assert group_status(api, "high")["nominated"] is None
    (released,) = [e for e in events(api)["high"] if e["reason"] == "NominationReleased"]
    assert released["message"].startswith(
        "the 2 node(s) held for it (Preempting since 1970-01-01T02:40:00Z) are released; ")
    assert "did not free up in time" in released["message"]


def test_kubernetes_podgroup_shown_with_a_hold_keeps_it():
    """Kubernetes' own PodGroup has no status.nominated; the operator shows it one in
    process (nominations.py), and the core reads it as from a Phalanx PodGroup."""
    upstream = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                "metadata": {"name": "w", "namespace": "ns"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
                "status": {"nominated": {"nodes": ["n3", "n2"], "reason": "Preempting",
                                         "since": "2026-12-01T04:00:00Z",
                                         "expires": "2026-12-01T04:05:00Z"}}}
    nomination = parse_pod_group(upstream).nomination
    assert nomination is not None and nomination.nodes == ("n2", "n3")
