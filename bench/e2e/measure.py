"""Readings for the end-to-end benchmark: process CPU and memory from /proc, API request
counters from kube-apiserver's /metrics, and a watcher (own process) that timestamps
each pod's binding as its watch event arrives.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import ssl
import sys
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from multiprocessing.queues import Queue
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcessReading:
    cpu_seconds: float  # user + system of the process itself
    rss_mib: float
    peak_rss_mib: float  # VmHWM: the kernel's high-water mark of resident memory


def read_process(pid: int) -> ProcessReading | None:
    """CPU seconds (utime + stime) and resident memory of `pid`; None once it is gone."""
    try:
        stat = open(f"/proc/{pid}/stat").read()  # noqa: SIM115 - read at once
        status = open(f"/proc/{pid}/status").read()  # noqa: SIM115
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # fields 14, 15 of stat(5)
    memory = {
        line.split(":")[0]: int(line.split()[1]) / 1024
        for line in status.splitlines()
        if line.startswith(("VmRSS:", "VmHWM:"))
    }
    return ProcessReading(cpu, memory.get("VmRSS", 0.0), memory.get("VmHWM", 0.0))


def load_average() -> tuple[float, float, float]:
    one, five, fifteen = os.getloadavg()
    return (round(one, 2), round(five, 2), round(fifteen, 2))


# -- API server metrics -----------------------------------------------------------------------

def parse_request_counts(text: str) -> dict[str, Any]:
    """From /metrics text: requests by (verb, resource, subresource) and by flow schema.

    `apiserver_request_total` counts every request the server answered (all clients);
    `apiserver_flowcontrol_dispatched_requests_total` counts requests per API Priority and
    Fairness flow schema, which is how one client's requests are told apart.
    """
    by_call: dict[str, float] = {}
    by_flow: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "apiserver_request_total":
                labels = sample.labels
                call = f"{labels.get('verb')} {labels.get('resource')}"
                if labels.get("subresource"):
                    call += f"/{labels['subresource']}"
                by_call[call] = by_call.get(call, 0.0) + sample.value
            elif sample.name == "apiserver_flowcontrol_dispatched_requests_total":
                flow = sample.labels.get("flow_schema", "")
                by_flow[flow] = by_flow.get(flow, 0.0) + sample.value
    return {"by_call": by_call, "by_flow": by_flow, "total": sum(by_call.values())}


def count_delta(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """after - before for each counter (only those that moved)."""
    def diff(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, int]:
        keys = sorted(set(a) | set(b))
        moved = {k: round(b.get(k, 0.0) - a.get(k, 0.0)) for k in keys}
        return {k: v for k, v in sorted(moved.items(), key=lambda kv: -kv[1]) if v}

    return {
        "by_call": diff(before["by_call"], after["by_call"]),
        "by_flow": diff(before["by_flow"], after["by_flow"]),
        "total": round(after["total"] - before["total"]),
    }


# -- connection to the API server -------------------------------------------------------------

@dataclass(frozen=True)
class Endpoint:
    server: str
    token: str
    ca_cert: str

    def connection(self, timeout: float | None = 30.0) -> http.client.HTTPSConnection:
        url = urllib.parse.urlparse(self.server)
        context = ssl.create_default_context(cafile=self.ca_cert)
        return http.client.HTTPSConnection(url.hostname or "127.0.0.1", url.port, timeout=timeout,
                                           context=context)

    def headers(self, accept: str = "application/json") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", "Accept": accept}

    def list_items(self, path: str, page: int = 2000, timeout: float = 60.0) -> dict[str, Any]:
        """A list read in pages of `page` items (the `continue` token), as one `{"items": [...]}`:
        read at once, bench-5000's 20,870 pods were one 20 MB reply, which a loaded API
        server cut short (IncompleteRead) after the run had been measured."""
        items: list[Any] = []
        token = ""
        while True:
            query = urllib.parse.urlencode({"limit": page} | ({"continue": token} if token else {}))
            reply = json.loads(self.get_text(f"{path}?{query}", timeout=timeout))
            items += reply.get("items") or []
            token = (reply.get("metadata") or {}).get("continue") or ""
            if not token:
                return {"items": items}

    def get_text(self, path: str, timeout: float = 60.0, accept: str = "application/json") -> str:
        connection = self.connection(timeout)
        try:
            connection.request("GET", path, headers=self.headers(accept))
            response = connection.getresponse()
            body = response.read().decode()
            if response.status != 200:
                raise RuntimeError(f"GET {path}: {response.status} {body[:200]}")
            return body
        finally:
            connection.close()

    def scrape(self) -> dict[str, Any]:
        return parse_request_counts(self.get_text("/metrics"))


# -- the binding watcher ----------------------------------------------------------------------

BOUND = "spec.nodeName!="
# Metadata only: small events, so the watcher keeps up with bursts of bindings (a watcher
# that falls behind is closed by kube-apiserver). Every object the selector lets through
# is bound.
METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"


def watch_bindings(endpoint: Endpoint, namespace: str, out: Queue[Any]) -> None:
    """Put ("ready",) once watching, then (pod name, "watch" | "list", time) per bound pod,
    and ("break", time, reason, resumed) each time the watch broke.

    Runs in its own process (so timestamps are not delayed by the submitter). Watches
    pods whose nodeName is set: a pod enters the watch (ADDED) when it is bound. When the
    watch breaks (closed, any error) it is resumed from the last resourceVersion it
    delivered, as client-go's reflector does, so no binding is timed late by a re-list;
    only when kube-apiserver no longer holds that version (410 Gone) does it list again,
    and pods first seen in that list are reported with source "list" and its time. (A
    re-list of 20,000 pods took ~25 s at 5,000 nodes, and every binding of that gap was
    timed at its end: gangs bound together were counted as partly bound.)
    """
    _ahead_of_the_measured()
    seen: set[str] = set()
    watching: list[bool] = []  # non-empty once ("ready",) was put
    version: str | None = None
    while True:
        resumed = version is not None
        try:
            if version is None:
                version = _list_bound(endpoint, namespace, seen, out)
            version = _watch_bound(endpoint, namespace, version, seen, out, watching)
            reason = "closed by the server"
        except Gone as error:
            reason, version = repr(error), None
        except Exception as error:  # keep watching whatever happened
            reason = repr(error)
        print(f"binding watcher: {reason} at {time.strftime('%H:%M:%S')}; "
              f"{'resuming' if version else 'listing again'}", file=sys.stderr, flush=True)
        out.put(("break", time.time(), reason, resumed))
        time.sleep(0.2)


def _ahead_of_the_measured(boost: int = 5) -> None:
    """Run the watcher before the processes it measures when the CPU is short: it times
    each binding as its event arrives, so a watcher waiting for the CPU behind the API
    server and the scheduler under test times bindings late by as much as it waits. The
    same for every contender; without the right to raise it (not root), it runs as
    before. (It does not remove kube-apiserver's own delivery lag: at bench-5000 a 128-pod
    gang whose replies all came within 1.5 s was still seen bound over 3 s.)"""
    with contextlib.suppress(PermissionError):
        os.nice(-boost)


class Gone(RuntimeError):
    """kube-apiserver no longer holds the version the watch would resume from."""


def _list_bound(endpoint: Endpoint, namespace: str, seen: set[str],
                out: Queue[Any]) -> str:
    selector = urllib.parse.quote(BOUND)
    text = endpoint.get_text(f"/api/v1/namespaces/{namespace}/pods?fieldSelector={selector}",
                             timeout=300.0, accept=METADATA_ONLY.replace("as=PartialObjectMetadata",
                                                                         "as=PartialObjectMetadataList"))
    listing = json.loads(text)
    now = time.time()
    for item in listing.get("items") or []:  # null when empty (PartialObjectMetadataList)
        _record(item, now, seen, out, "list")
    return str(listing["metadata"]["resourceVersion"])


def _watch_bound(endpoint: Endpoint, namespace: str, version: str, seen: set[str],
                 out: Queue[Any], watching: list[bool]) -> str:
    """Watch from `version` until the server closes the stream; the last version delivered
    (events and bookmarks), to resume from."""
    query = (f"?watch=1&fieldSelector={urllib.parse.quote(BOUND)}&resourceVersion={version}"
             "&allowWatchBookmarks=true&timeoutSeconds=3600")
    connection = endpoint.connection(timeout=None)
    try:
        connection.request("GET", f"/api/v1/namespaces/{namespace}/pods{query}",
                           headers=endpoint.headers(METADATA_ONLY))
        response = connection.getresponse()
        if response.status == 410:
            raise Gone(f"watch: 410 {response.read()[:200]!r}")
        if response.status != 200:
            raise RuntimeError(f"watch: {response.status} {response.read()[:200]!r}")
        if not watching:
            out.put(("ready",))
            watching.append(True)
        for event in watch_events(response):
            version = _follow(event, version, seen, out)
        return version
    finally:
        connection.close()


def _follow(event: Mapping[str, Any], version: str, seen: set[str], out: Queue[Any]) -> str:
    """Record one watch event; the resourceVersion to resume from after it."""
    kind, item = event.get("type"), event.get("object") or {}
    if kind == "ERROR":
        error = RuntimeError if item.get("code") != 410 else Gone
        raise error(f"watch error event: {item}")
    if kind in ("ADDED", "MODIFIED"):
        _record(item, time.time(), seen, out, "watch")
    return str(item.get("metadata", {}).get("resourceVersion") or version)


def watch_events(response: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
    """The JSON events of a watch response, one per line, until the server closes it."""
    while True:
        line = response.readline()
        if not line:
            return
        if line.strip():
            yield json.loads(line)


def _record(pod: Mapping[str, Any], now: float, seen: set[str], out: Queue[Any],
            source: str) -> None:
    """A pod the bound-pods selector let through, first seen by a watch event or a list."""
    name = pod["metadata"]["name"]
    if name not in seen:
        seen.add(name)
        out.put((name, source, now))
