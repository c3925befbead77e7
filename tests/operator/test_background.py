"""The loop does not wait for writes, yet never places a pod twice nor reorders a status."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

from operator_fakes import FakeApi, podgroup
from test_scheduler import cluster, gpu_pod

from manual_clock import turns
from phalanx.config import Settings
from phalanx.operator.assumed import AssumedPods
from phalanx.operator.background import BackgroundWrites
from phalanx.operator.cache import ClusterCache
from phalanx.operator.events import Event
from phalanx.operator.kube.client import JSON, Reply
from phalanx.operator.scheduler import Scheduler
from phalanx.operator.writes import Writes


class HeldApi(FakeApi):
    """An API server that answers nothing `holds` (every path unless told) until
    `release` is set."""

    def __init__(self, holds: Callable[[str], bool] = lambda path: True) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.started = 0
        self.sent: list[tuple[str, Any]] = []
        self._holds = holds

    async def request(self, method: str, path: str, body: Any = None,
                      content_type: str = JSON) -> Reply:
        self.started += 1
        self.sent.append((path, body))
        if self._holds(path):
            await self.release.wait()
        return await super().request(method, path, body, content_type)


class GatedApi(HeldApi):
    """Answers at once, except a pod's binding while its gate (by pod name) is closed
    (such a binding is in `sent` once answered)."""

    def __init__(self, gates: dict[str, asyncio.Event]) -> None:
        super().__init__(holds=lambda path: False)
        self.delay = 0
        self._gates = gates

    async def request(self, method: str, path: str, body: Any = None,
                      content_type: str = JSON) -> Reply:
        pod = path.rsplit("/", 2)[-2]
        if path.endswith("/binding") and pod in self._gates:
            await self._gates[pod].wait()
        return await super().request(method, path, body, content_type)


async def test_a_cycle_returns_while_its_bindings_are_in_flight_and_the_next_does_not_rebind():
    objects = cluster(podgroup(min_member=2), gpu_pod("a"), gpu_pod("b"))
    api = HeldApi()
    scheduler = Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                          clock=lambda: 1000.0)
    first = await asyncio.wait_for(scheduler.cycle(), timeout=5)
    assert len(first.bindings) == 2
    assert api.calls == []  # nothing answered yet: the cycle did not wait
    second = await asyncio.wait_for(scheduler.cycle(), timeout=5)
    assert second.bindings == ()  # the pods are assumed on their nodes
    api.release.set()
    assert await scheduler.settle(timeout=5)
    bound = sorted(b["metadata"]["name"] for _, p, b in api.calls if p.endswith("/binding"))
    assert bound == ["a", "b"]
    assert scheduler.writes.counts.bound == 2


async def test_writes_still_held_at_shutdown_are_cancelled_after_the_grace():
    objects = cluster(podgroup(min_member=1), gpu_pod("a"))
    scheduler = Scheduler(ClusterCache.from_objects(objects), HeldApi(), Settings())
    await scheduler.cycle()
    assert len(scheduler.writes) > 0
    await asyncio.wait_for(scheduler.close(timeout=0.05), timeout=5)
    assert len(scheduler.writes) == 0


def gated_jobs(gate: asyncio.Event, log: list[str], noted: str) -> Callable[[str], Any]:
    """Write jobs that wait for `gate`, each putting its label in `log` when it has
    "started" or when it is "done"."""
    def job(label: str) -> Any:
        async def run() -> None:
            if noted == "started":
                log.append(label)
            await gate.wait()
            if noted == "done":
                log.append(label)
        return run
    return job


async def test_status_writes_of_one_object_run_one_at_a_time_and_the_newest_wins():
    writes = BackgroundWrites(concurrency=8)
    gate = asyncio.Event()
    done: list[str] = []
    job = gated_jobs(gate, done, noted="done")

    writes.offer("podgroups/ns/g", job("first"))
    await asyncio.sleep(0)  # the first write is in flight
    for label in ("second", "third", "newest"):
        writes.offer("podgroups/ns/g", job(label))
    writes.offer("queues/default", job("queue"))
    gate.set()
    assert await writes.settle(timeout=5)
    assert [d for d in done if d != "queue"] == ["first", "newest"]
    assert "queue" in done


async def test_a_failing_write_is_counted_and_does_not_stop_the_next_one():
    writes = BackgroundWrites(concurrency=1)
    done: list[str] = []

    async def broken() -> None:
        raise RuntimeError("boom")

    async def fine() -> None:
        done.append("fine")

    writes.offer("k", broken)
    writes.offer("k", fine)  # replaces `broken` if not started, else follows it
    writes.offer("other", broken)
    assert await writes.settle(timeout=5)
    assert done == ["fine"]
    assert writes.failures >= 1



async def test_a_pod_whose_binding_is_still_queued_stays_assumed_past_the_ttl():
    objects = cluster(podgroup(min_member=2), gpu_pod("a"), gpu_pod("b"))
    api, now = HeldApi(), [1000.0]
    scheduler = Scheduler(ClusterCache.from_objects(objects), api,
                          Settings(assume_seconds=5), clock=lambda: now[0])
    await scheduler.cycle()
    now[0] += 600  # the API server has not answered for ten minutes
    assert (await scheduler.cycle()).bindings == ()
    api.release.set()
    assert await scheduler.settle(timeout=5)
    bindings = [p for p in api.paths("POST") if p.endswith("/binding")]
    assert sorted(bindings) == ["/api/v1/namespaces/ns/pods/a/binding",
                                "/api/v1/namespaces/ns/pods/b/binding"]


async def test_the_next_cycle_waits_for_room_while_many_bindings_are_queued():
    objects = cluster(podgroup(min_member=4), *(gpu_pod(f"p{i}") for i in range(4)))
    api = HeldApi()
    scheduler = Scheduler(ClusterCache.from_objects(objects), api,
                          Settings(binding_concurrency=1))  # low water: 2 pods
    await scheduler.cycle()
    room = asyncio.create_task(scheduler.writes.binder.room())
    await turns()
    assert not room.done() and scheduler.writes.binder.in_flight == 4
    api.release.set()
    await asyncio.wait_for(room, timeout=5)
    assert await scheduler.settle(timeout=5)
    assert scheduler.writes.binder.in_flight == 0


def _group_body() -> dict[str, Any]:
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ns", "uid": "u1"}}


async def test_a_replaced_status_write_hands_its_events_and_its_news_to_the_newest():
    api = HeldApi()
    writes = Writes(api, AssumedPods(ttl_seconds=30), concurrency=8, clock=lambda: 1000.0)
    group = _group_body()
    writes.status("podgroups", group, {"phase": "Pending"})
    while api.started == 0:  # the first write is in flight, held by the API server
        await asyncio.sleep(0)
    placed = {"phase": "Running", "placement": {"nodes": ["n1"]}}
    writes.status("podgroups", group, placed,
                  [Event(group, "Normal", "Preempting", "evicting 2 pods of ns/low")])
    assert writes.as_offered("podgroups", group)["status"] == placed  # the base of the next
    writes.status("podgroups", group, {"phase": "Running"},
                  [Event(group, "Normal", "Scheduled", "placed")])  # replaces the queued one
    api.release.set()
    assert await writes.background.settle(timeout=5)
    posted = [b["reason"] for m, p, b in api.calls if m == "POST" and p.endswith("/events")]
    assert posted == ["Preempting", "Scheduled"]
    patched = [b["status"] for m, p, b in api.calls if m == "PATCH"]
    assert patched == [{"phase": "Pending"}, {"phase": "Running"}]


class Sequenced(HeldApi):
    """Notes each request when sent and when answered, in one sequence."""

    def __init__(self, held: bool) -> None:
        super().__init__()
        self.sequence: list[tuple[str, str]] = []
        if not held:
            self.release.set()

    async def request(self, method: str, path: str, body: Any = None,
                      content_type: str = JSON) -> Reply:
        self.sequence.append(("sent", path))
        reply = await super().request(method, path, body, content_type)
        self.sequence.append(("answered", path))
        return reply


def fresh(*objects: dict[str, Any]) -> list[dict[str, Any]]:
    """The shared cluster with a Queue of its own that shows no status yet (tests that
    echo their writes leave one on the shared Queue)."""
    queue = {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "Queue",
             "metadata": {"name": "default"}, "spec": {}}
    return [queue, *(o for o in copy.deepcopy(cluster(*objects)) if o["kind"] != "Queue")]


def gang_of_two_scheduler(api: Sequenced) -> Scheduler:
    """A scheduler over one gang of two GPU pods, its writes going to `api`."""
    objects = fresh(podgroup(min_member=2), gpu_pod("a"), gpu_pod("b"))
    return Scheduler(ClusterCache.from_objects(objects), api, Settings(), clock=lambda: 1000.0)


def queue_status_sent(api: Sequenced) -> int | None:
    return next((i for i, (what, path) in enumerate(api.sequence)
                 if what == "sent" and "/queues/default/status" in path), None)


async def test_the_queue_status_counts_the_cycles_bindings_before_any_is_answered():
    api = Sequenced(held=True)  # the API server answers nothing yet
    scheduler = gang_of_two_scheduler(api)
    await scheduler.cycle()
    await scheduler.capacity_reported()
    await turns()
    assert queue_status_sent(api) is not None
    assert not any(what == "answered" for what, _ in api.sequence)
    api.release.set()
    assert await scheduler.settle(timeout=5)
    status = next(b["status"] for m, p, b in api.calls if p.endswith("/queues/default/status"))
    assert status["allocated"]["nvidia.com/gpu"] == "16"  # the two pods of 8 GPUs


async def test_a_cycle_that_places_nothing_reports_the_queue_at_once():
    objects = fresh(podgroup(min_member=3), gpu_pod("a"), gpu_pod("b"))  # cannot place
    api = Sequenced(held=True)
    scheduler = Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                          clock=lambda: 1000.0)
    result = await scheduler.cycle()
    await scheduler.capacity_reported()
    await turns()
    assert result.bindings == () and queue_status_sent(api) is not None
    api.release.set()
    assert await scheduler.settle(timeout=5)


async def test_bookkeeping_waits_while_more_pods_wait_for_bindings_than_may_be_in_flight():
    """A gang's status and its Events leave the API server to a backlog's bindings; they
    follow once no more pods wait than the binder may have in flight, the status changes
    meanwhile written once."""
    api = HeldApi()
    writes = Writes(api, AssumedPods(60), 1, clock=lambda: 1000.0)  # one binding at a time
    group = podgroup(min_member=3)
    assignments = {"ns/a": "n1", "ns/b": "n1", "ns/c": "n1"}
    writes.bind_gang("ns/pg", assignments, {k: {} for k in assignments}, "",
                     then=lambda outcome: asyncio.sleep(0))
    writes.status("podgroups", group, {"phase": "Placed"})
    writes.event(Event(group, "Normal", "Placed", "placed"))
    await turns()
    assert api.started == 1  # one binding in flight: bookkeeping waits for the others
    writes.status("podgroups", group, {"phase": "Running"})  # replaces the queued one
    api.release.set()
    assert await writes.settle(timeout=5)
    statuses = [b["status"]["phase"] for m, p, b in api.calls if p.endswith("/status")]
    assert statuses == ["Running"]
    paths = [p for _, p, _ in api.calls]
    second_binding = [i for i, p in enumerate(paths) if p.endswith("/binding")][1]
    assert paths.index(next(p for p in paths if p.endswith("/events"))) > second_binding


async def test_bookkeeping_once_held_waits_for_the_last_binding():
    """A saturated binder holds bookkeeping until every binding is answered, not only
    until no more wait than may be in flight: the last bindings of a backlog are not
    slowed by its bookkeeping."""
    api = HeldApi(holds=lambda path: path.endswith("/pods/c/binding"))  # c's, until released
    api.delay = 0
    writes = Writes(api, AssumedPods(60), 1, clock=lambda: 1000.0)  # one binding at a time
    assignments = {"ns/a": "n1", "ns/b": "n1", "ns/c": "n1"}
    writes.bind_gang("ns/pg", assignments, {k: {} for k in assignments}, "",
                     then=lambda outcome: asyncio.sleep(0))
    writes.status("podgroups", podgroup(min_member=3), {"phase": "Placed"})
    await turns()
    paths = [p for _, p, _ in api.calls]
    assert [p.rsplit("/", 2)[1] for p in paths] == ["a", "b"]  # c in flight, status waits
    api.release.set()
    assert await writes.settle(timeout=5)
    assert [p for _, p, _ in api.calls][-1].endswith("/status")


async def test_held_bookkeeping_waits_for_the_bindings_decided_before_it_not_later_ones():
    """A gang's status follows the bindings decided before it, not the ones decided after
    it: a saturated binder fed without pause never holds the bookkeeping longer than the
    bindings that were ahead of it."""
    gates = {"c": asyncio.Event(), "f": asyncio.Event()}
    api = GatedApi(gates)
    writes = Writes(api, AssumedPods(60), 1, clock=lambda: 1000.0)  # one binding at a time
    first = {"ns/a": "n1", "ns/b": "n1", "ns/c": "n1"}
    writes.bind_gang("ns/pg", first, {k: {} for k in first}, "",
                     then=lambda outcome: asyncio.sleep(0))
    writes.status("podgroups", podgroup(min_member=3), {"phase": "Placed"})
    await turns()  # a and b answered, c held; the status waits
    later = {"ns/d": "n2", "ns/e": "n2", "ns/f": "n2"}  # decided by a later cycle
    writes.bind_gang("ns/later", later, {k: {} for k in later}, "",
                     then=lambda outcome: asyncio.sleep(0))
    await turns()
    assert not any(p.endswith("/status") for p, _ in api.sent)
    gates["c"].set()
    await turns()
    assert any(p.endswith("/status") for p, _ in api.sent)  # f's binding still held
    gates["f"].set()
    assert await writes.settle(timeout=5)


async def test_bookkeeping_does_not_wait_for_bindings_the_binder_has_in_flight():
    """Arrivals rarely saturate the binder: their gangs' statuses go with the bindings."""
    api = HeldApi()
    writes = Writes(api, AssumedPods(60), 8, clock=lambda: 1000.0)
    assignments = {"ns/a": "n1", "ns/b": "n1"}
    writes.bind_gang("ns/pg", assignments, {k: {} for k in assignments}, "",
                     then=lambda outcome: asyncio.sleep(0))
    writes.status("podgroups", podgroup(min_member=2), {"phase": "Placed"})
    await turns()
    assert api.started == 3  # both bindings and the status, none answered yet
    api.release.set()
    assert await writes.settle(timeout=5)


async def test_bookkeeping_waits_no_longer_than_its_bound(monkeypatch: Any) -> None:
    monkeypatch.setattr("phalanx.operator.binder.BOOKKEEPING_WAIT", 0.05)
    api = HeldApi()
    writes = Writes(api, AssumedPods(60), 1, clock=lambda: 1000.0)
    writes.bind_gang("ns/pg", {"ns/a": "n1", "ns/b": "n1"}, {"ns/a": {}, "ns/b": {}}, "",
                     then=lambda outcome: asyncio.sleep(0))
    writes.status("podgroups", podgroup(min_member=2), {"phase": "Placed"})
    await turns()
    assert api.started == 1  # a binding, held by the API server; the other queued
    await asyncio.sleep(0.2)  # past the bound (real time: asyncio's own timeout)
    assert api.started == 2  # the status went although the binding is still unanswered
    api.release.set()
    assert await writes.settle(timeout=5)


async def test_a_gang_of_one_pod_is_bound_without_a_plan_written_first():
    """One pod cannot be left partly bound: its binding waits for no status write."""
    objects = cluster(podgroup(min_member=1), gpu_pod("a"))
    api = HeldApi()
    scheduler = Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                          clock=lambda: 1000.0)
    await scheduler.cycle()
    await turns()
    assert api.sent[0][0] == "/api/v1/namespaces/ns/pods/a/binding"  # first, waiting for none
    api.release.set()
    assert await scheduler.settle(timeout=5)
    statuses = [b["status"] for m, p, b in api.calls if p.endswith("/podgroups/g/status")]
    assert statuses and all("plan" not in status for status in statuses)
