"""The cache parses each object once per version; a cycle only assembles (counted parses)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from phalanx.config.settings import Mode
from phalanx.core.eviction import Eviction, EvictionReason
from phalanx.core.names import GroupKey, PodKey
from phalanx.core.parse import snapshot_from_objects
from phalanx.core.parse.objects import PARSERS
from phalanx.operator.assumed import AssumedPods
from phalanx.operator.cache import ClusterCache, Kind, object_key
from phalanx.operator.cache_snapshot import Unseen, parse_view, take_snapshot
from phalanx.operator.evictions import EvictionBook
from phalanx.operator.nominations import NominationBook


def pod(name: str, version: str, gpus: str = "8", node: str | None = None,
        gated: bool = False) -> dict[str, Any]:
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
                     "labels": {"scheduling.phalanx.io/pod-group": "g"}},
        "spec": spec, "status": {"phase": "Pending"},
    }


def group(version: str = "1") -> dict[str, Any]:
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ns", "uid": "uid-g",
                         "resourceVersion": version},
            "spec": {"minMember": 2}}


class Watched:
    """Stores shaped as the watches keep them, and a cache over them that counts parses."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.stores: dict[Kind, dict[str, list[dict[str, Any]]]] = {kind: {} for kind in Kind}
        self.parses: list[str] = []
        self.cache = ClusterCache(self.stores, {k: self._counted(f) for k, f in PARSERS.items()})
        for body in objects:
            self.put(body)

    def _counted(self, parse: Callable[[Any], object]) -> Callable[[Any], object]:
        def counted(obj: Any) -> object:
            meta = obj["metadata"]
            self.parses.append(f"{meta['name']}@{meta.get('resourceVersion', '')}")
            return parse(obj)
        return counted

    def put(self, body: dict[str, Any]) -> None:  # a watch event: a new body
        kind = Kind.POD if body["kind"] == "Pod" else Kind.POD_GROUP
        self.stores[kind][object_key(body)] = [body]

    def snapshot(self, assumed: AssumedPods | None = None, unseen: Unseen | None = None,
                 mode: Mode = Mode.BOTH) -> Any:
        return take_snapshot(self.cache, assumed or AssumedPods(60), mode, unseen=unseen)


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


def test_a_view_is_parsed_as_the_stores_were_when_it_was_taken():
    store: dict[str, list[dict[str, Any]]] = {"ns/a": [pod("a", "1")]}
    cache = ClusterCache({Kind.POD: store})
    view = cache.view()  # what a worker thread parses while the watches go on
    store["ns/b"] = [pod("b", "2")]
    store["ns/a"] = [pod("a", "3", node="n1")]
    seen = [(p.name, p.node_name) for _, p in parse_view(cache, view)[Kind.POD]]
    assert seen == [("a", None)]
    assert sorted((p.name, p.node_name) for _, p in cache.parsed(Kind.POD)) == [
        ("a", "n1"), ("b", None)]
