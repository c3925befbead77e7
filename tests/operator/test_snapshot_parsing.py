"""The cache parses each object once per version; a cycle only assembles (counted parses)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from phalanx.config.settings import Mode
from phalanx.core.model.eviction import Eviction, EvictionReason
from phalanx.core.model.names import GroupKey, PodKey
from phalanx.core.parse import snapshot_from_objects
from phalanx.core.parse.objects import PARSERS
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.snapshot.picture import Snapshot
from phalanx.operator.assumed import AssumedPods
from phalanx.operator.cache import ClusterCache, Kind, WatchStore, kind_of_body, object_key
from phalanx.operator.cache_snapshot import Unseen, parse_view, take_snapshot
from phalanx.operator.evictions import EvictionBook
from phalanx.operator.nominations import NominationBook


def pod(name: str, version: str, gpus: str = "8", node: str | None = None,
        gated: bool = False, gang: str = "g") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "phalanx",
        "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": gpus}}}],
    }
    if node:
        spec["nodeName"] = node
    if gated:
        spec["schedulingGates"] = [{"name": "scheduling.phalanx.io/gang"}]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                     "resourceVersion": version,
                     "labels": {"scheduling.phalanx.io/pod-group": gang}},
        "spec": spec, "status": {"phase": "Pending"},
    }


def group(version: str = "1", name: str = "g") -> dict[str, Any]:
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "resourceVersion": version},
            "spec": {"minMember": 2}}


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"},
            "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "64", "pods": "110"}}}


class Watched:
    """Stores shaped as the watches keep them, and a cache over them that counts parses."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.stores: dict[Kind, dict[str, list[dict[str, Any]]]] = {kind: {} for kind in Kind}
        self.parses: list[str] = []
        self.cache = ClusterCache(self.stores, {k: self._counted(f) for k, f in PARSERS.items()})
        self.index: ClusterIndex | None = None  # the last snapshot's, as the operator keeps it
        for body in objects:
            self.put(body)

    def _counted(self, parse: Callable[[Any], object]) -> Callable[[Any], object]:
        def counted(obj: Any) -> object:
            meta = obj["metadata"]
            self.parses.append(f"{meta['name']}@{meta.get('resourceVersion', '')}")
            return parse(obj)
        return counted

    def put(self, body: dict[str, Any]) -> None:  # a watch event: a new body
        kind = kind_of_body(body)
        assert kind is not None
        self.stores[kind][object_key(body)] = [body]

    def snapshot(self, assumed: AssumedPods | None = None, unseen: Unseen | None = None,
                 mode: Mode = Mode.BOTH) -> Snapshot:
        snapshot = take_snapshot(self.cache, assumed or AssumedPods(60), mode, unseen=unseen,
                                 previous=self.index)
        self.index = snapshot.index
        return snapshot


def test_an_unchanged_object_is_parsed_once_and_a_changed_one_again() -> None:
    watched = Watched(pod("a", "1"), pod("b", "1"), group())
    first = watched.snapshot()
    assert sorted(watched.parses) == ["a@1", "b@1", "g@1"]
    watched.parses.clear()
    watched.put(pod("b", "2", gpus="4"))  # the watch brings a new version of b
    second = watched.snapshot()
    assert watched.parses == ["b@2"]
    assert first.pods[0] is second.pods[0]  # a's PodInfo is the one parsed before
    fresh = snapshot_from_objects([pod("a", "1"), pod("b", "2", gpus="4"), group()])
    assert second.pods == fresh.pods and second.groups == fresh.groups
    watched.parses.clear()
    watched.snapshot()
    assert watched.parses == []


def test_a_relisted_object_at_the_same_version_is_not_parsed_again() -> None:
    watched = Watched(pod("a", "5"))
    watched.snapshot()
    watched.put(pod("a", "5"))  # a fresh LIST: a new body, the same version
    watched.parses.clear()
    watched.snapshot()
    assert watched.parses == []


def test_an_assumed_pod_is_shown_bound_without_parsing_it_again() -> None:
    watched = Watched(pod("a", "1", gated=True), pod("b", "1"))
    watched.snapshot()
    watched.parses.clear()
    assumed = AssumedPods(60)
    assumed.assume("ns/a", "node-1")
    assumed.assume("ns/b", "node-2")
    shown = {p.name: p for p in watched.snapshot(assumed).pods}
    assert watched.parses == []
    assert shown["a"].node_name == "node-1" and shown["a"].scheduling_gates == ()
    assert shown["b"].node_name == "node-2"
    watched.parses.clear()  # the watch shows b bound elsewhere: its version wins
    watched.put(pod("b", "2", node="node-9"))
    assert {p.name: p.node_name for p in watched.snapshot(assumed).pods} == {
        "a": "node-1", "b": "node-9"}
    assert watched.parses == ["b@2"]


def test_a_pod_being_evicted_shows_terminating_without_parsing_it_again() -> None:
    watched = Watched(pod("a", "1", node="n1"), pod("b", "1", node="n1"))
    watched.snapshot()
    watched.parses.clear()
    evicting = EvictionBook(retry_seconds=30, ttl_seconds=30)
    evicting.start([Eviction(PodKey("ns/a"), GroupKey("ns/g"), EvictionReason.PREEMPTED,
                             GroupKey("ns/p"), "preempted by ns/p")])
    shown = watched.snapshot(unseen=Unseen(evicting, NominationBook(), now=0.0))
    assert {p.name: p.terminating for p in shown.pods} == {"a": True, "b": False}
    assert watched.parses == []


def test_deleted_objects_leave_the_snapshot() -> None:
    watched = Watched(pod("a", "1"), pod("b", "1"))
    watched.snapshot()
    del watched.stores[Kind.POD]["ns/b"]
    assert [p.name for p in watched.snapshot().pods] == ["a"]


def test_objects_without_a_resource_version_are_parsed_every_time() -> None:
    watched = Watched(pod("a", ""))
    watched.snapshot()
    watched.snapshot()
    assert watched.parses == ["a@", "a@"]


def test_an_invalid_object_is_reported_every_cycle_and_parsed_once() -> None:
    broken = pod("a", "1")
    broken["spec"]["containers"] = "not a list"
    watched = Watched(broken)
    first, second = watched.snapshot(), watched.snapshot()
    assert watched.parses == ["a@1"]
    assert [e.name for e in first.invalid] == [e.name for e in second.invalid] == ["ns/a"]


def test_objects_parsed_as_listed_are_not_parsed_again_by_the_first_snapshot() -> None:
    watched = Watched()
    listed = [pod("a", "1"), pod("b", "1"), group()]
    watched.cache.warm(Kind.POD, listed[:2])  # a LIST's page, parsed as it arrives
    watched.cache.warm(Kind.POD_GROUP, listed[2:])
    assert sorted(watched.parses) == ["a@1", "b@1", "g@1"]
    for body in listed:  # then stored as the watch keeps them
        watched.put(body)
    watched.parses.clear()
    shown = watched.snapshot()
    assert watched.parses == []
    assert shown.pods == snapshot_from_objects(listed).pods


@pytest.mark.parametrize("store", [{}, WatchStore()], ids=["entries copied", "a watch's"])
def test_a_view_is_parsed_as_the_stores_were_when_it_was_taken(store: Any) -> None:
    store["ns/a"] = (pod("a", "1"),)
    cache = ClusterCache({Kind.POD: store})
    view = cache.view()  # what a worker thread parses while the watches go on
    store["ns/b"] = (pod("b", "2"),)
    store["ns/a"] = (pod("a", "3", node="n1"),)
    seen = [(p.name, p.node_name) for p in parse_view(cache, view, Mode.BOTH).pods]
    assert seen == [("a", None)]
    assert sorted((p.name, p.node_name) for _, p in cache.parsed(Kind.POD)) == [
        ("a", "n1"), ("b", None)]


def assert_same(got: Snapshot, want: Snapshot) -> None:
    """The same objects in the same order, and the same summaries in their indexes (a
    Snapshot itself compares by identity)."""
    for field in ("nodes", "pods", "groups", "queues", "topologies", "priority_classes"):
        assert tuple(getattr(got, field)) == tuple(getattr(want, field)), field
    assert [str(e) for e in got.invalid] == [str(e) for e in want.invalid]
    got_index, want_index = got.index, want.index
    assert got_index.members == want_index.members
    assert (got_index.singles, got_index.loose_running, got_index.free, got_index.pods_free) == (
        want_index.singles, want_index.loose_running, want_index.free, want_index.pods_free)
    assert (got_index.gpu_pods, got_index.shared_nodes, got_index.cluster_total) == (
        want_index.gpu_pods, want_index.shared_nodes, want_index.cluster_total)


def landed(body: dict[str, Any], node_name: str) -> dict[str, Any]:
    """A pod as the watch will show it once bound to `node_name`."""
    return {**body, "spec": {**body["spec"], "nodeName": node_name}}


def test_snapshots_built_cycle_after_cycle_equal_ones_built_from_scratch() -> None:
    nodes, groups = [node("n1"), node("n2")], [group(name="g"), group(name="h")]
    pods = {"a": pod("a", "1", gpus="2"), "b": pod("b", "1", gpus="2"),
            "c": pod("c", "1", gang="h"), "d": pod("d", "1", gang="h"),
            "f": pod("f", "1", gpus="1", node="n1")}
    watched = Watched(*nodes, *pods.values(), *groups)
    assert_same(watched.snapshot(), snapshot_from_objects([*nodes, *pods.values(), *groups]))

    pods["b"] = pod("b", "2", gpus="2", node="n1")  # bound: the watch brings a new version
    pods["x"] = pod("x", "1", gang="h")  # arrived
    del watched.stores[Kind.POD]["ns/d"], pods["d"]  # deleted
    for body in (pods["b"], pods["x"]):
        watched.put(body)
    assumed = AssumedPods(60)
    assumed.assume("ns/c", "n2")  # being bound by this process
    evicting = EvictionBook(retry_seconds=30, ttl_seconds=30)
    evicting.start([Eviction(PodKey("ns/f"), GroupKey("ns/g"), EvictionReason.PREEMPTED,
                             GroupKey("ns/h"), "preempted by ns/h")])
    unseen = Unseen(evicting, NominationBook(), now=0.0)
    as_seen = {**pods, "c": landed(pods["c"], "n2"),
               "f": {**pods["f"], "metadata": {**pods["f"]["metadata"],
                                               "deletionTimestamp": "2026-12-01T00:00:00Z"}}}
    expected = snapshot_from_objects([*nodes, *as_seen.values(), *groups])
    second = watched.snapshot(assumed, unseen)
    assert_same(second, expected)

    third = watched.snapshot(assumed, unseen)  # nothing changed: every summary taken over
    assert_same(third, expected)
    assert all(third.index.members[key] is summary
               for key, summary in second.index.members.items())
