"""Pods, PodGroups and Nodes through a plain list+watch on raw JSON, not through Kopf.

Pods are by far the most frequent events (about three per pod while a gang starts),
and PodGroups next (each of the operator's own status writes comes back as one).
Kopf's per-event machinery (handler invocation, cause detection, diff-base copies,
readiness wake-ups) cost about half the operator's CPU during bursts, and its start-up
wakes every object's worker on each index change (quadratic: ten seconds of a core for
1,000 Nodes). Here an event is one `orjson.loads`, one dict update and a poke.
This departs from "watched kinds through Kopf indexes" on purpose; Queues,
NetworkTopologies and PriorityClasses, being few and rarely changing, stay with Kopf.
Nothing is written to the watched objects.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Hashable, Mapping, Sequence
from typing import Any, Protocol

import aiohttp
import orjson
import structlog
from kubernetes_asyncio import client as k8s

from phalanx.operator.cache import Body, WatchStore, object_key, slim
from phalanx.operator.clock import Clock, MonotonicClock

log = structlog.get_logger("phalanx.operator")

PODS_PATH = "/api/v1/pods"
# A LIST is read in pages of this many objects: at bench-5000 one page of 20,870 pods was
# tens of megabytes that kube-apiserver built, sent and this process decoded in one go.
LIST_PAGE_SIZE = 1000
Query = list[tuple[str, Any]]  # (name, value) pairs of a URL's query
# With allowWatchBookmarks the API server sends a bookmark about every minute on a quiet
# watch (kubernetes/kubernetes#90249), so a watch silent for this long is a dead one.
READ_TIMEOUT_SECONDS = 150.0


# A streamed list (KEP-3157 WatchList, on by default from Kubernetes 1.34): one watch that
# first sends every object as ADDED, then a bookmark with this annotation.
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
# Streamed objects are handed to `on_listed` (parsed by the cache) in batches of this many.
STREAM_BATCH = 500


class StreamRefused(Exception):
    """The API server does not stream lists (an older one, or WatchList turned off)."""


class Expired(Exception):
    """The watch's resourceVersion is gone (410): only a fresh LIST can continue."""


class WatchFailed(Exception):
    """The API server ended the watch with an error other than 410."""


OnPage = Callable[[Sequence[Any]], None]


class ListWatchSource(Protocol):
    """The two requests the watcher makes (faked in unit tests)."""

    async def list(self, on_page: OnPage | None = None) -> Mapping[str, Any]:
        """Every object; `on_page` is given each page's items as they arrive."""
        ...

    def watch(self, resource_version: str) -> AsyncGenerator[bytes, None]: ...

    def stream(self) -> AsyncGenerator[bytes, None]:
        """A watch that starts with every object (ADDED), then a bookmark annotated
        `INITIAL_EVENTS_END`; raises `StreamRefused` if the server does not serve one.
        Asked for only by a watcher told to stream."""
        ...


class RawWatch:
    """Keeps `store` (key -> one slimmed object, the shape ClusterCache reads) up to date."""

    def __init__(
        self,
        source: ListWatchSource,
        on_change: Callable[[], None],
        initial_backoff: float = 0.5,
        max_backoff: float = 10.0,
        api_version: str = "v1",
        kind: str = "Pod",
        clock: Clock | None = None,
        on_arrival: Callable[[], None] | None = None,
        streaming: bool = False,
    ) -> None:
        """`streaming`: take the whole state as a streamed list (`ListWatchSource.stream`)
        rather than a LIST, until the server refuses one. bench-5000's 20,870 pending pods
        into the cache (`python -m bench.e2e.stream_list`, two runs of three rounds, in
        alternation): streamed 0.99-1.75 s, 0.95-1.11 s of this process's CPU; listed in
        pages of 1,000 2.00-2.28 s, 1.38-1.40 s. The API server sends the objects one by
        one as it encodes them, and they are parsed here meanwhile; a LIST's page is
        parsed only once it is whole, while the next is asked for, and at each page's
        start one side waits for the other."""
        self.api_version = api_version
        self._clock = clock or MonotonicClock()  # waits between failed watches
        self.kind = kind
        self.source = source
        self.on_change = on_change
        # An object added or deleted (new work, or capacity freed); else `on_change`.
        self.on_arrival = on_arrival or on_change
        self.store = WatchStore()
        # Given each listed page's bodies (slimmed, as they will be stored) as it arrives,
        # while the API server builds the next page: the cache parses them there.
        self.on_listed: Callable[[Sequence[Body]], None] | None = None
        self._listing: list[Body] = []
        self._streaming = streaming
        # while a stream sends its objects: key -> body, and the batch not parsed yet
        self._initial: dict[Hashable, Body] | None = None
        self._batch: list[Body] = []
        self._began = 0.0
        self.listed = asyncio.Event()
        self.resource_version = ""
        self.lists = 0
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff

    async def run(self) -> None:
        """List, then watch from the list's version; forever, until cancelled."""
        delay = self._initial_backoff
        while True:
            try:
                streams = not self.resource_version and self._streaming
                if not self.resource_version and not streams:
                    self._listing = []
                    began = self._clock.now()
                    # not kept in a local: the raw LIST would live as long as the watch
                    self._take(self._listing, await self.source.list(self._listed_page))
                    log.info("listed", kind=self.kind, objects=len(self.store),
                             seconds=round(self._clock.now() - began, 3))
                seen = 0
                if streams:
                    self._initial, self._batch, self._began = {}, [], self._clock.now()
                source = self.source.stream() if streams else self.source.watch(
                    self.resource_version)
                async with contextlib.aclosing(source) as lines:
                    async for line in lines:
                        seen += 1
                        self.apply(line)
                if seen:
                    delay = self._initial_backoff  # a watch that ran out: continue at once
                    continue
                # A watch that ended with nothing at all: wait before the next, so a server
                # that closes every watch at once is not asked again in a tight loop.
            except asyncio.CancelledError:
                raise
            except StreamRefused as error:
                log.info("the API server streams no lists; listing", kind=self.kind,
                         reason=str(error))
                self._streaming = False
                continue
            except Expired:
                log.info("watch expired; listing again", kind=self.kind)
                self.resource_version = ""
                continue
            except k8s.ApiException as error:
                if error.status == 410:
                    self.resource_version = ""
                    continue
                log.warning("watch failed", kind=self.kind, status=error.status,
                            reason=str(error.reason))
            except WatchFailed as error:
                self.resource_version = ""
                log.warning("watch ended with an error; listing again", kind=self.kind,
                            error=str(error))
            except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as error:
                log.warning("watch interrupted", kind=self.kind,
                            error=f"{type(error).__name__}: {error}")
            finally:
                self._initial, self._batch = None, []  # a stream cut before its end: again
            await self._clock.sleep(delay)
            delay = min(delay * 2, self._max_backoff)

    def replace(self, listed: Mapping[str, Any]) -> None:
        """Take a LIST reply as the whole truth (objects missed while not watching are gone)."""
        self._take(self._slimmed(listed.get("items") or ()), listed)

    def _listed_page(self, items: Sequence[Any]) -> None:
        bodies = self._slimmed(items)
        self._listing += bodies
        if self.on_listed is not None:
            self.on_listed(bodies)

    def _slimmed(self, items: Sequence[Any]) -> list[Body]:
        return [slim({"apiVersion": self.api_version, "kind": self.kind, **item})
                for item in items]

    def _take(self, bodies: Sequence[Body], listed: Mapping[str, Any]) -> None:
        fresh: dict[Hashable, tuple[Body]] = {object_key(body): (body,) for body in bodies}
        self._listing = []
        self.store.clear()
        self.store.update(fresh)
        self.resource_version = str(listed.get("metadata", {}).get("resourceVersion") or "")
        self.lists += 1
        self.listed.set()
        self.on_change()

    def apply(self, line: bytes) -> None:
        """One watch event (a JSON line)."""
        if not line.strip():
            return
        event = orjson.loads(line)  # about twice as fast as json on watch events
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Expired(str(obj.get("message", "")))
            raise WatchFailed(f"{obj.get('code')} {obj.get('message', '')}".strip())
        if self._initial is not None:
            self._stream_event(kind, obj)
            return
        version = obj.get("metadata", {}).get("resourceVersion")
        if kind in ("ADDED", "MODIFIED"):
            body = slim(obj)
            self.store[object_key(body)] = (body,)
        elif kind == "DELETED":
            self.store.pop(object_key(obj), None)
        elif kind != "BOOKMARK":
            return
        if version:
            self.resource_version = str(version)
        if kind == "MODIFIED":
            self.on_change()
        elif kind != "BOOKMARK":
            self.on_arrival()


    def _stream_event(self, kind: Any, obj: Mapping[str, Any]) -> None:
        """One event of a stream's initial state; at its end bookmark the objects sent
        become the whole truth, as a LIST's (`_take`), and the stream goes on as a watch."""
        if kind == "BOOKMARK":
            metadata = obj.get("metadata") or {}
            if (metadata.get("annotations") or {}).get(INITIAL_EVENTS_END) != "true":
                return
            self._parse_batch()
            bodies = list((self._initial or {}).values())
            self._initial = None
            self._take(bodies, {"metadata": {"resourceVersion": metadata.get("resourceVersion")}})
            log.info("listed", kind=self.kind, objects=len(self.store), streamed=True,
                     seconds=round(self._clock.now() - self._began, 3))
            return
        body = slim(obj)
        key = object_key(body)
        assert self._initial is not None
        if kind == "DELETED":
            self._initial.pop(key, None)
            return
        self._initial[key] = body
        self._batch.append(body)
        if len(self._batch) >= STREAM_BATCH:
            self._parse_batch()

    def _parse_batch(self) -> None:
        if self._batch and self.on_listed is not None:
            self.on_listed(self._batch)
        self._batch = []


class ApiListWatch:
    """`ListWatchSource` over a kubernetes-asyncio ApiClient; replies never become models."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        timeout_seconds: int = 300,
        path: str = PODS_PATH,
        read_timeout: float = READ_TIMEOUT_SECONDS,
        page_size: int = LIST_PAGE_SIZE,
    ) -> None:
        self._client = api_client
        self._page_size = page_size
        self._timeout = timeout_seconds
        self._path = path
        self._read_timeout = read_timeout

    async def _get(self, query: Query, timeout: aiohttp.ClientTimeout) -> Any:
        return await self._client.call_api(
            self._path,
            "GET",
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=timeout,
        )

    async def list(self, on_page: OnPage | None = None) -> Mapping[str, Any]:
        """Every object, page by page (one consistent snapshot: the API server's continue
        token; an expired one answers 410 and the watcher lists again); the reply has
        the items of all pages (none when `on_page` took them: the raw pages are not
        held) and the resourceVersion to watch from. The next page is asked for before
        `on_page` reads this one, so the API server builds it meanwhile (at bench-5000
        the operator parsed 20,870 pods only after the last page came)."""
        items: list[Any] = []
        following = asyncio.ensure_future(self._page([("limit", self._page_size)]))
        try:
            while True:
                page = await following
                meta = page.get("metadata") or {}
                if meta.get("continue"):
                    following = asyncio.ensure_future(self._page(
                        [("limit", self._page_size), ("continue", meta["continue"])]))
                found = page.get("items") or []
                if on_page is not None:
                    on_page(found)
                else:
                    items += found
                if not meta.get("continue"):
                    return {"metadata": {"resourceVersion": meta.get("resourceVersion")},
                            "items": items}
        finally:
            if not following.done():
                following.cancel()

    async def _page(self, query: Query) -> Mapping[str, Any]:
        response = await self._answered(
            await self._get(query, aiohttp.ClientTimeout(total=120, sock_connect=10)))
        try:
            data = orjson.loads(await response.read())
        finally:
            response.release()
        return data if isinstance(data, dict) else {}

    @staticmethod
    async def _answered(response: Any) -> Any:
        """The response, if the request succeeded; else its status as an ApiException.
        Asked for unread (`_preload_content=False`), kubernetes-asyncio raises none itself:
        an expired continue token (410) read as a page ended the LIST early with a part of
        the objects, and a refused watch was read as event lines."""
        if 200 <= response.status <= 299:
            return response
        try:
            raw = await response.read()
        finally:
            response.release()
        try:
            body = orjson.loads(raw) if raw else {}
        except ValueError:
            body = {}
        reason = body.get("reason") or body.get("message") if isinstance(body, dict) else None
        raise k8s.ApiException(status=response.status, reason=str(reason or response.status))

    def watch(self, resource_version: str) -> AsyncGenerator[bytes, None]:
        return self._lines([
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", self._timeout),
        ])

    def stream(self) -> AsyncGenerator[bytes, None]:
        """The current state streamed (no resourceVersion: as recent as a LIST), then the
        watch from there."""
        return self._lines([
            ("watch", "true"),
            ("sendInitialEvents", "true"),
            ("resourceVersionMatch", "NotOlderThan"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", self._timeout),
        ], streamed=True)

    async def _lines(self, query: Query, streamed: bool = False) -> AsyncGenerator[bytes, None]:
        timeout = aiohttp.ClientTimeout(
            total=self._timeout + 30, sock_connect=10, sock_read=self._read_timeout
        )
        try:
            response = await self._answered(await self._get(query, timeout))
        except k8s.ApiException as error:
            # refused as a request the server does not take (a 400 or 422 where WatchList
            # is off, a 403 from an admission or authorizer that knows no streamed list)
            if streamed and error.status in (400, 403, 422):
                raise StreamRefused(f"{error.status} {error.reason}") from error
            raise
        try:
            # Split lines ourselves: aiohttp's readline refuses lines over 128 KiB.
            pending = b""
            async for chunk in response.content.iter_any():
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    yield line
            if pending:
                yield pending
        finally:
            response.release()
