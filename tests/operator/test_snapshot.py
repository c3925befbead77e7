"""The core sees assumed pods on their nodes, and only the pending pods we will place."""

from __future__ import annotations

from operator_fakes import pod, podgroup

from phalanx.config.settings import Mode
from phalanx.operator.assumed import AssumedPods
from phalanx.operator.cache import ByKey, ClusterCache, Kind, WatchStore
from phalanx.operator.cache_snapshot import take_snapshot
from phalanx.operator.pods import pod_key

CONTAINERS = [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]


def pods_seen(cache, assumed, mode):
    return {p.name: p.node_name for p in take_snapshot(cache, assumed, mode).pods}


def test_assumed_pods_are_shown_bound_until_the_watch_confirms():
    cache = ClusterCache.from_objects([pod("a", containers=CONTAINERS),
                                       pod("b", containers=CONTAINERS), podgroup()])
    assumed = AssumedPods(60)
    assumed.assume("ns/a", "n1", now=0.0)
    assert pods_seen(cache, assumed, Mode.BOTH) == {"a": "n1", "b": None}
    assumed.expire({"ns/a": pod("a", node="n1")}, now=1.0)
    assert "ns/a" not in assumed


def test_assumption_expires():
    assumed = AssumedPods(5)
    assumed.assume("ns/a", "n1", now=0.0)
    assumed.expire({"ns/a": pod("a")}, now=6.0)
    assert "ns/a" not in assumed


def test_mode_hides_pods_the_writer_would_not_place():
    objects = [pod("bind", containers=CONTAINERS),
               pod("gate", gated=True, scheduler="default-scheduler", containers=CONTAINERS),
               pod("running", node="n1", scheduler="default-scheduler", containers=CONTAINERS)]
    cache = ClusterCache.from_objects(objects)
    assert set(pods_seen(cache, AssumedPods(1), Mode.BINDER)) == {
        "bind", "running"}
    assert set(pods_seen(cache, AssumedPods(1), Mode.GATE)) == {
        "gate", "running"}


def test_cache_reads_objects_by_kind():
    cache = ClusterCache.from_objects([pod("a"), podgroup()])
    assert cache.get(Kind.POD, "ns/a")["metadata"]["name"] == "a"
    assert [g["metadata"]["name"] for g in cache.objects(Kind.POD_GROUP)] == ["g"]


def test_a_views_pods_are_read_by_their_pod_key_without_copying():
    store = WatchStore({"ns/a": (pod("a"),), "other/b": (pod("b", namespace="other"),),
                        "ns/gone": ()})
    pods = ByKey(ClusterCache({Kind.POD: store}).view()[Kind.POD])
    store["ns/c"] = (pod("c"),)  # after the view: not in it
    assert {key: pod_key(body) for key, body in pods.items()} == {
        "ns/a": "ns/a", "other/b": "other/b"}
    assert len(pods) == 2
    assert "ns/gone" not in pods and pods.get("ns/c") is None
