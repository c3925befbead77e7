"""The raw watch keeps its store in step with the API server: events, expiry, drops, silence."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import aiohttp
from operator_fakes import serve_get

from phalanx.operator.cache import ClusterCache, Kind
from phalanx.operator.clock import MonotonicClock
from phalanx.operator.kube.raw_watch import OnPage, RawWatch


def pod(name: str, version: str, node: str = "") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "resourceVersion": version,
            "managedFields": [{"manager": "kubectl"}],
        },
        "spec": {"nodeName": node} if node else {},
    }


def line(kind: str, obj: Mapping[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode()


def listing(version: str, *pods: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": version}, "items": list(pods)}


class FakeSource:
    """Replies LISTs in order; each watch replays its script (lines, or an exception)."""

    def __init__(self, lists: list[dict[str, Any]], watches: list[list[bytes | Exception]]):
        self.lists = lists
        self.watches = watches
        self.watched_from: list[str] = []
        self.idle = asyncio.Event()

    async def list(self, on_page: OnPage | None = None) -> Mapping[str, Any]:
        listed = self.lists.pop(0)
        if on_page is not None:
            on_page(listed["items"])
        return listed

    def watch(self, resource_version: str) -> AsyncGenerator[bytes, None]:
        self.watched_from.append(resource_version)
        return self._replay(self.watches)

    async def _replay(
        self, scripts: list[list[bytes | Exception]]
    ) -> AsyncGenerator[bytes, None]:
        """The next script's lines (an exception is raised where it stands); with none
        left, idle for ever, as a watch with nothing to say."""
        if not scripts:
            self.idle.set()
            await asyncio.Event().wait()
        for item in scripts.pop(0):
            if isinstance(item, Exception):
                raise item
            yield item


class Pokes:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def pods_in(watch: RawWatch) -> dict[str, Any]:
    cache = ClusterCache({Kind.POD: watch.store})
    return {p["metadata"]["name"]: p for p in cache.objects(Kind.POD)}


async def run_until_idle(watch: RawWatch, source: FakeSource) -> None:
    task = asyncio.create_task(watch.run())
    await asyncio.wait_for(source.idle.wait(), timeout=5)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def test_events_add_change_and_delete_pods_and_poke_the_loop():
    pokes = Pokes()
    watch = RawWatch(FakeSource([], []), pokes)
    watch.replace(listing("10", pod("a", "9")))
    watch.apply(line("ADDED", pod("b", "11")))
    watch.apply(line("MODIFIED", pod("a", "12", node="n1")))
    watch.apply(line("DELETED", pod("b", "13")))
    watch.apply(line("BOOKMARK", {"metadata": {"resourceVersion": "20"}}))
    watch.apply(b"")

    pods = pods_in(watch)
    assert list(pods) == ["a"]
    assert pods["a"]["spec"]["nodeName"] == "n1"
    assert "managedFields" not in pods["a"]["metadata"]
    assert pods["a"]["metadata"]["namespace"] == "ns"
    assert watch.resource_version == "20"
    assert pokes.count == 4  # the list and three changes; a bookmark changes nothing
    assert watch.listed.is_set()


def test_added_and_deleted_objects_are_arrivals_and_changes_are_not():
    """The loop decides arrivals while earlier writes drain; a binding or a status
    change (MODIFIED) waits for the writes (see `SchedulingLoop`)."""
    changes, arrivals = Pokes(), Pokes()
    watch = RawWatch(FakeSource([], []), changes, on_arrival=arrivals)
    watch.replace(listing("10", pod("a", "9")))
    watch.apply(line("ADDED", pod("b", "11")))
    watch.apply(line("MODIFIED", pod("a", "12", node="n1")))
    watch.apply(line("DELETED", pod("b", "13")))
    watch.apply(line("BOOKMARK", {"metadata": {"resourceVersion": "20"}}))
    assert (changes.count, arrivals.count) == (2, 2)  # the list and one change; two arrivals


def test_listed_pods_carry_their_kind():
    watch = RawWatch(FakeSource([], []), Pokes())
    watch.replace(listing("1", pod("a", "1")))
    assert pods_in(watch)["a"]["kind"] == "Pod"


def test_listed_podgroups_carry_their_kind_and_api_version():
    """A LIST reply's items have no kind; the operator's PodGroup watch says which."""
    watch = RawWatch(FakeSource([], []), Pokes(), api_version="scheduling.phalanx.io/v1alpha1",
                     kind="PodGroup")
    watch.replace(listing("1", pod("g", "1")))
    cache = ClusterCache({Kind.POD_GROUP: watch.store})
    (group,) = cache.objects(Kind.POD_GROUP)
    assert (group["apiVersion"], group["kind"]) == ("scheduling.phalanx.io/v1alpha1", "PodGroup")


async def test_an_expired_watch_lists_again_and_drops_pods_deleted_meanwhile():
    source = FakeSource(
        lists=[listing("10", pod("a", "9"), pod("b", "9")), listing("30", pod("a", "25"))],
        watches=[
            [line("ADDED", pod("c", "11")), line("ERROR", {"kind": "Status", "code": 410})],
        ],
    )
    watch = RawWatch(source, Pokes(), initial_backoff=0)
    await run_until_idle(watch, source)

    assert source.watched_from == ["10", "30"]
    assert sorted(pods_in(watch)) == ["a"]
    assert watch.lists == 2


async def test_a_dropped_connection_watches_again_from_the_last_version():
    source = FakeSource(
        lists=[listing("10")],
        watches=[
            [line("ADDED", pod("a", "11")), aiohttp.ClientConnectionError("reset")],
            [line("BOOKMARK", {"metadata": {"resourceVersion": "15"}})],  # server timeout
            [line("ADDED", pod("b", "16"))],
        ],
    )
    watch = RawWatch(source, Pokes(), initial_backoff=0)
    await run_until_idle(watch, source)

    assert source.watched_from == ["10", "11", "15", "16"]
    assert sorted(pods_in(watch)) == ["a", "b"]
    assert watch.lists == 1


async def test_other_watch_errors_list_again():
    source = FakeSource(
        lists=[listing("10", pod("a", "9")), listing("40")],
        watches=[[line("ERROR", {"kind": "Status", "code": 500, "message": "etcd"})]],
    )
    watch = RawWatch(source, Pokes(), initial_backoff=0)
    await run_until_idle(watch, source)

    assert source.watched_from == ["10", "40"]
    assert pods_in(watch) == {}


class RecordingClock(MonotonicClock):
    """Waits no time, and notes how long each wait would have been."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await asyncio.sleep(0)


async def test_watches_that_end_with_nothing_are_retried_with_a_growing_wait():
    source = FakeSource(lists=[listing("10")], watches=[[], [], []])
    clock = RecordingClock()
    watch = RawWatch(source, Pokes(), initial_backoff=0.5, max_backoff=10, clock=clock)
    await run_until_idle(watch, source)
    assert source.watched_from == ["10", "10", "10", "10"]
    assert clock.sleeps[:3] == [0.5, 1.0, 2.0]


async def test_a_watch_that_goes_silent_is_given_up_after_the_read_timeout():
    """A connection that died without a FIN would otherwise leave the operator blind until
    the watch's own timeout (five minutes)."""
    from aiohttp import web
    from kubernetes_asyncio import client as k8s

    from phalanx.operator.kube.raw_watch import ApiListWatch

    done = asyncio.Event()

    async def stalled_watch(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(line("ADDED", pod("a", "11")) + b"\n")
        with contextlib.suppress(TimeoutError):  # then nothing, as from a dead peer
            await asyncio.wait_for(done.wait(), timeout=30)
        return response

    address, runner = await serve_get("/api/v1/pods", stalled_watch)
    configuration = k8s.Configuration(host=address)
    api_client = k8s.ApiClient(configuration)
    try:
        source = ApiListWatch(api_client, read_timeout=0.5)
        received = []
        started = asyncio.get_running_loop().time()
        with contextlib.suppress(TimeoutError):
            async for item in source.watch("10"):
                received.append(json.loads(item))
        assert [r["object"]["metadata"]["name"] for r in received] == ["a"]
        assert asyncio.get_running_loop().time() - started < 5
    finally:
        done.set()
        await api_client.close()
        await runner.cleanup()


async def test_each_listed_page_is_handed_on_slimmed_as_the_store_will_keep_it():
    pages: list[list[Any]] = []
    source = FakeSource([listing("5", pod("a", "4"), pod("b", "5"))], [[]])
    watch = RawWatch(source, Pokes())
    watch.on_listed = lambda bodies: pages.append(list(bodies))
    await run_until_idle(watch, source)
    assert [[b["metadata"]["name"] for b in page] for page in pages] == [["a", "b"]]
    assert all(b["metadata"].get("managedFields") is None for b in pages[0])
    assert [body for (body,) in watch.store.values()] == pages[0]  # the very bodies
    assert all(stored is handed for (stored,), handed in zip(watch.store.values(), pages[0],
                                                              strict=True))


def end_of_initial(version: str) -> bytes:
    return line("BOOKMARK", {"metadata": {"resourceVersion": version, "annotations": {
        "k8s.io/initial-events-end": "true"}}})


class StreamingSource(FakeSource):
    """A server that streams lists: each `stream` replays the next of `streams`, or
    refuses (`StreamRefused`) when there is none left and `refuse` is set."""

    def __init__(self, streams: list[list[bytes | Exception]], lists: list[dict[str, Any]],
                 watches: list[list[bytes | Exception]], refuse: bool = False) -> None:
        super().__init__(lists, watches)
        self.streams = streams
        self.refuse = refuse
        self.streamed = 0

    async def stream(self) -> AsyncGenerator[bytes, None]:
        from phalanx.operator.kube.raw_watch import StreamRefused

        self.streamed += 1
        if not self.streams and self.refuse:
            raise StreamRefused("422 Invalid")
        async for item in self._replay(self.streams):
            yield item


async def test_a_streamed_list_becomes_the_store_at_its_end_and_the_stream_goes_on_as_a_watch():
    pokes, parsed = Pokes(), []
    source = StreamingSource(streams=[[
        line("ADDED", pod("a", "5")), line("ADDED", pod("b", "7")),
        line("BOOKMARK", {"metadata": {"resourceVersion": "8"}}),  # an ordinary bookmark
        end_of_initial("20"),
        line("DELETED", pod("a", "21")), line("ADDED", pod("c", "22")),
    ]], lists=[], watches=[])
    watch = RawWatch(source, pokes, initial_backoff=0, streaming=True)
    watch.on_listed = lambda bodies: parsed.extend(b["metadata"]["name"] for b in bodies)
    seen_before_end: list[list[str]] = []
    original = watch._stream_event

    def spy(kind: Any, obj: Mapping[str, Any]) -> None:
        seen_before_end.append(sorted(pods_in(watch)))
        original(kind, obj)

    watch._stream_event = spy  # type: ignore[method-assign]
    await run_until_idle(watch, source)

    assert seen_before_end == [[], [], [], []]  # nothing stored before the end bookmark
    assert parsed == ["a", "b"]  # parsed as streamed, before the store takes them
    assert sorted(pods_in(watch)) == ["b", "c"]
    assert watch.lists == 1 and watch.listed.is_set()
    assert source.watched_from == ["22"]  # after the stream ran out: from its last event
    assert source.lists == []  # no LIST asked for


async def test_a_stream_cut_before_its_end_is_streamed_again_and_keeps_nothing_of_the_first():
    source = StreamingSource(streams=[
        [line("ADDED", pod("gone", "5")), aiohttp.ClientConnectionError("reset")],
        [line("ADDED", pod("b", "9")), end_of_initial("12")],
    ], lists=[], watches=[])
    watch = RawWatch(source, Pokes(), initial_backoff=0, streaming=True)
    await run_until_idle(watch, source)

    assert source.streamed == 2
    assert sorted(pods_in(watch)) == ["b"]
    assert watch.lists == 1 and source.watched_from == ["12"]


async def test_a_server_that_streams_no_lists_is_listed_from_then_on():
    source = StreamingSource(streams=[], refuse=True, lists=[listing("10", pod("a", "9"))],
                             watches=[[line("ERROR", {"kind": "Status", "code": 410})]])
    source.lists.append(listing("30", pod("b", "29")))
    watch = RawWatch(source, Pokes(), initial_backoff=0, streaming=True)
    await run_until_idle(watch, source)

    assert source.streamed == 1  # refused once, never asked again
    assert source.watched_from == ["10", "30"]
    assert sorted(pods_in(watch)) == ["b"]


async def test_the_stream_asks_for_the_initial_state_and_a_refusal_is_told_apart():
    """What the API server is asked for (KEP-3157's parameters), and a server that answers
    422 (WatchList off) refuses: the watcher then lists (test above)."""
    import pytest
    from aiohttp import web
    from kubernetes_asyncio import client as k8s

    from phalanx.operator.kube.raw_watch import ApiListWatch, StreamRefused

    asked: list[dict[str, str]] = []
    refuse = [False]

    async def pods(request: web.Request) -> web.StreamResponse:
        asked.append(dict(request.query))
        if refuse[0]:
            return web.json_response({"kind": "Status", "code": 422, "reason": "Invalid"},
                                     status=422)
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(line("ADDED", pod("a", "5")) + b"\n" + end_of_initial("6") + b"\n")
        return response

    address, runner = await serve_get("/api/v1/pods", pods)
    api_client = k8s.ApiClient(k8s.Configuration(host=address))
    try:
        source = ApiListWatch(api_client)
        lines = [json.loads(item) async for item in source.stream()]
        assert [e["type"] for e in lines] == ["ADDED", "BOOKMARK"]
        assert {k: asked[0].get(k) for k in ("watch", "sendInitialEvents",
                                             "resourceVersionMatch", "allowWatchBookmarks")} == {
            "watch": "true", "sendInitialEvents": "true",
            "resourceVersionMatch": "NotOlderThan", "allowWatchBookmarks": "true"}
        assert "resourceVersion" not in asked[0]  # as recent as a LIST
        refuse[0] = True
        with pytest.raises(StreamRefused):
            async for _ in source.stream():
                pass
    finally:
        await api_client.close()
        await runner.cleanup()
