"""Time on a full cluster (#31), the operator's half, on a fake API: a gang past its runtime
limit is evicted as victims are (DisruptionTarget first, then the Eviction API), with an
Event and a condition RuntimeLimitExceeded; a waiting gang shows when it is expected to
start (status.expectedStart), estimated at most every estimate_interval_seconds and
removed once it is scheduled; `kubectl phalanx explain` says it."""

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

from phalanx.config import Settings
from phalanx.core.cycle import run_cycle
from phalanx.core.model.eviction import EvictionReason
from phalanx.core.model.names import GroupKey
from phalanx.core.model.result import ExpectedStart, GroupDecision, PodCounts
from phalanx.core.model.status import Reason, StatusCode
from phalanx.core.parse import snapshot_from_objects
from phalanx.kubectl.explain import explain_group
from phalanx.operator.cache import ClusterCache
from phalanx.operator.compose import Timing, eviction_refused_event, podgroup_status
from phalanx.operator.evictor import Victims, VictimsEvicted
from phalanx.operator.scheduler import Scheduler

NOW = 10_000.0  # 02:46:40 UTC on the first day of 1970
LIMIT_MESSAGE = "ran past its runtime limit of 3600s (started at 00:00 UTC)"


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def one_rack(started: str, limit: int | None = 3600) -> list[dict[str, Any]]:
    """A rack of two 8-GPU nodes, full with gang `long` (started at `started`, runtime
    limit `limit`); gang `next` waits for the same two nodes."""
    spec = {} if limit is None else {"runtimeLimitSeconds": limit}
    return [
        node("n0", "r0"), node("n1", "r0"), TOPOLOGY, QUEUE,
        podgroup("long", min_member=2, **spec),
        gpu_pod("long-0", "long", "n0", started), gpu_pod("long-1", "long", "n1", started),
        podgroup("next", min_member=2),
        gpu_pod("next-0", "next"), gpu_pod("next-1", "next"),
    ]


def scheduler(objects: list[dict[str, Any]], api: FakeApi, clock: Clock,
              **settings: Any) -> Scheduler:
    return Scheduler(ClusterCache.from_objects(objects), api, Settings(**settings), clock=clock)


def calls(api: FakeApi, method: str, part: str) -> list[tuple[str, Any]]:
    return [(path, body) for m, path, body in api.calls if m == method and part in path]


def statuses(api: FakeApi, name: str) -> list[dict[str, Any]]:
    return [body["status"] for _, body in calls(api, "PATCH", f"podgroups/{name}/status")]


def conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status["conditions"]}


# -- enforcement, carried out ----------------------------------------------------------------


async def test_a_gang_past_its_limit_is_evicted_with_its_event_and_condition() -> None:
    api = FakeApi()
    running = scheduler(one_rack("1970-01-01T00:00:00Z"), api, Clock())
    result = await settled_cycle(running)
    assert {(e.pod, e.reason, e.preemptor) for e in result.evictions} == {
        ("ns/long-0", EvictionReason.RUNTIME_LIMIT, "ns/long"),
        ("ns/long-1", EvictionReason.RUNTIME_LIMIT, "ns/long")}

    for name in ("long-0", "long-1"):  # as any victim: the condition, then the Eviction API
        order = [(m, path.rsplit("/", 1)[-1], bool(body and body.get("deleteOptions", {})
                                                   .get("dryRun")))
                 for m, path, body in api.calls if f"/pods/{name}/" in path]
        assert order == [("POST", "eviction", True), ("PATCH", "status", False),
                         ("POST", "eviction", False)], order
        (target,) = calls(api, "PATCH", f"pods/{name}/status")[0][1]["status"]["conditions"]
        assert (target["type"], target["status"]) == ("DisruptionTarget", "True")
        assert target["reason"] == "PreemptionByScheduler"
        assert target["message"] == f"phalanx: {LIMIT_MESSAGE}"

    (event,) = [body for _, body in calls(api, "POST", "/events")
                if body["involvedObject"]["name"] == "long"
                and body["reason"] == "RuntimeLimitExceeded"]
    assert event["type"] == "Warning"
    assert event["message"] == f"2 pods evicted: {LIMIT_MESSAGE}"

    limit = conditions(statuses(api, "long")[-1])["RuntimeLimitExceeded"]
    assert (limit["status"], limit["reason"], limit["message"]) == (
        "True", "RuntimeLimitExceeded", LIMIT_MESSAGE)
    sample = running.metrics.registry.get_sample_value
    assert sample("phalanx_evictions_total", {"reason": "RuntimeLimitExceeded"}) == 2


async def test_a_gang_within_its_limit_runs_on_and_has_no_such_condition() -> None:
    api = FakeApi()
    result = await settled_cycle(scheduler(one_rack("1970-01-01T02:00:00Z"), api, Clock()))
    assert result.evictions == ()
    assert calls(api, "POST", "/eviction") == []
    assert all("RuntimeLimitExceeded" not in conditions(s) for s in statuses(api, "long"))


async def test_a_refused_runtime_limit_eviction_is_asked_again_only_after_the_retry() -> None:
    api = FakeApi()
    api.fail(lambda method, path: method == "POST" and "/pods/long-1/eviction" in path, 429)
    clock = Clock()
    running = scheduler(one_rack("1970-01-01T00:00:00Z"), api, clock)
    await settled_cycle(running)
    (refused,) = [body for _, body in calls(api, "POST", "/events")
                  if body["reason"] == "EvictionRefused"]
    assert refused["involvedObject"]["name"] == "long"
    assert "past the runtime limit was refused" in refused["message"]
    api.calls.clear()
    clock.now += 5  # the core asks again; the budget said no a moment ago
    await settled_cycle(running)
    assert calls(api, "POST", "/eviction") == []
    clock.now += 60  # eviction_retry_seconds later: asked again
    await settled_cycle(running)
    assert calls(api, "POST", "/eviction") != []


# -- expected starts, written -----------------------------------------------------------------


async def test_a_waiting_gang_shows_its_expected_start_estimated_every_interval() -> None:
    api = FakeApi()
    clock = Clock()
    running = scheduler(one_rack("1970-01-01T02:00:00Z"), api, clock,
                        estimate_interval_seconds=30)
    result = await settled_cycle(running)
    (expected,) = [e for e in result.expected_starts if e.group == "ns/next"]
    assert (expected.at, expected.waits_for) == (10_800.0, ("ns/long",))
    written = statuses(api, "next")[-1]["expectedStart"]
    assert written == {"at": "1970-01-01T03:00:00Z", "waitsFor": ["ns/long"],
                       "message": expected.message}
    assert "03:00 UTC" in expected.message

    clock.now += 10  # within the interval: no estimate, the written one stays
    assert (await settled_cycle(running)).expected_starts == ()
    assert all(s.get("expectedStart", written) == written for s in statuses(api, "next"))
    clock.now += 25
    assert (await settled_cycle(running)).expected_starts != ()


async def test_a_gang_waiting_for_work_with_no_limit_has_an_unknown_start() -> None:
    api = FakeApi()
    await settled_cycle(scheduler(one_rack("1970-01-01T02:00:00Z", limit=None), api, Clock()))
    written = statuses(api, "next")[-1]["expectedStart"]
    assert written["at"] is None and written["waitsFor"] == []
    assert written["message"].startswith("start unknown")


def waiting(pending: int = 2) -> GroupDecision:
    return GroupDecision("ns/g", True, False, 0, StatusCode.UNSCHEDULABLE,
                         Reason.NO_DOMAIN_FITS, "no rack has 16 GPUs free", None,
                         min_member=2, counts=PodCounts(pending=pending), on_nodes=0)


def scheduled() -> GroupDecision:
    return GroupDecision("ns/g", True, True, 2, StatusCode.SUCCESS, Reason.SCHEDULED, "",
                         None, min_member=2, counts=PodCounts(running=2), on_nodes=2)


SOON = ExpectedStart(GroupKey("ns/g"), 10_800.0, (GroupKey("ns/long"),),
                     "expected to start by 03:00 UTC, when 1 gang reaches its limit")


def test_expected_start_is_replaced_by_each_estimate_and_kept_between_them() -> None:
    first = podgroup_status(podgroup(), waiting(), NOW, Timing(True, SOON))
    assert first["expectedStart"] == {"at": "1970-01-01T03:00:00Z", "waitsFor": ["ns/long"],
                                      "message": SOON.message}
    kept = podgroup_status(podgroup(status=first), waiting(), NOW + 5, Timing())
    assert kept["expectedStart"] == first["expectedStart"]
    gone = podgroup_status(podgroup(status=first), waiting(), NOW + 30, Timing(True, None))
    assert gone["expectedStart"] is None  # estimated, and none for it: removed


def test_expected_start_is_removed_once_the_group_is_scheduled() -> None:
    before = podgroup_status(podgroup(), waiting(), NOW, Timing(True, SOON))
    after = podgroup_status(podgroup(status=before), scheduled(), NOW + 1, Timing())
    assert after["expectedStart"] is None


def test_waits_for_is_cut_to_what_the_crd_holds() -> None:
    many = ExpectedStart(GroupKey("ns/g"), None,
                         tuple(GroupKey(f"ns/g{i}") for i in range(100)), "start unknown")
    status = podgroup_status(podgroup(), waiting(), NOW, Timing(True, many))
    assert len(status["expectedStart"]["waitsFor"]) == 64
    assert status["expectedStart"]["at"] is None


def test_the_runtime_limit_condition_stays_and_the_gang_fails_once_its_pods_are_gone() -> None:
    running = GroupDecision("ns/g", True, True, 2, StatusCode.SUCCESS, Reason.SCHEDULED, "",
                            None, min_member=2, counts=PodCounts(running=2), on_nodes=2)
    evicting = podgroup_status(podgroup(status={"phase": "Running"}), running, NOW,
                               Timing(over_limit=LIMIT_MESSAGE))
    assert evicting["phase"] == "Running"
    limit = conditions(evicting)["RuntimeLimitExceeded"]
    assert (limit["status"], limit["message"]) == ("True", LIMIT_MESSAGE)
    gone = GroupDecision("ns/g", True, False, 0, StatusCode.UNSCHEDULABLE,
                         Reason.GANG_INCOMPLETE, "0 of 2 pods exist", None, min_member=2,
                         counts=PodCounts(), on_nodes=0)
    after = podgroup_status(podgroup(status=evicting), gone, NOW + 10, Timing())
    assert after["phase"] == "Failed"  # not Unknown: nothing that should run is missing
    assert conditions(after)["RuntimeLimitExceeded"] == limit  # kept, its time too
    assert conditions(after)["Unschedulable"]["status"] == "False"  # no alarm for it
    plain = podgroup_status(podgroup(status={"phase": "Running"}), gone, NOW, Timing())
    assert plain["phase"] == "Unknown" and "RuntimeLimitExceeded" not in conditions(plain)


def test_the_refused_event_of_a_gang_past_its_limit_says_it_runs_on() -> None:
    victims = Victims(GroupKey("ns/g"), GroupKey("ns/g"), EvictionReason.RUNTIME_LIMIT,
                      LIMIT_MESSAGE, ("ns/g-0",))
    event = eviction_refused_event(podgroup(), VictimsEvicted(
        victims, refused={"ns/g-0": "Cannot evict pod as it would violate the budget"}))
    assert event.reason == "EvictionRefused"
    assert "1 pod(s) past the runtime limit was refused" in event.message
    assert "tried again later" in event.message and "other victims" not in event.message


# -- kubectl phalanx explain ------------------------------------------------------------------


def test_explain_prints_the_expected_start_of_a_waiting_gang() -> None:
    objects = one_rack("1970-01-01T02:00:00Z")
    snapshot = snapshot_from_objects(objects)
    group = next(o for o in objects if o["metadata"]["name"] == "next")
    text = explain_group(group, snapshot, run_cycle(snapshot, now=NOW, estimate=True))
    assert "  Expected start: expected to start by 03:00 UTC, when 1 gang reaches its limit" in (
        text), text


def test_explain_without_an_estimate_prints_what_the_operator_wrote() -> None:
    objects = one_rack("1970-01-01T02:00:00Z")
    snapshot = snapshot_from_objects(objects)
    group = next(o for o in objects if o["metadata"]["name"] == "next")
    group["status"] = {"phase": "Pending", "expectedStart": {
        "at": "1970-01-01T03:00:00Z", "waitsFor": ["ns/long"], "message": SOON.message}}
    text = explain_group(group, snapshot, run_cycle(snapshot, now=NOW))
    assert f"  Expected start (from the operator): {SOON.message}" in text, text
