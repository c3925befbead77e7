"""Every write the shell makes, in the background, through one object.

Operations: `bind_gang` (bindings or pin-and-ungate patches, through the binder and its
own semaphore), `status` (a status patch, latest wins per object), `event`, `delete_pod`,
`evict` (a victim group's pods: condition, then eviction, see evictor.py), and `apply` /
`delete` (the PodGroups of automatic gangs); all but the first share the background
writer's semaphore, a quarter of the bindings' share of the API server. A new kind of
write joins here as one more method, so it gets the same bound and the same `settle`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any

import structlog

from phalanx.config import EvictionMode
from phalanx.core.model.names import COMPONENT
from phalanx.operator.assumed import AssumedPods
from phalanx.operator.assumed_claims import AssumedClaims
from phalanx.operator.background import BackgroundWrites
from phalanx.operator.binder import GangBinder, GangWritten
from phalanx.operator.cache import Body, object_key
from phalanx.operator.claim_writes import GangClaims
from phalanx.operator.compose import differs
from phalanx.operator.events import Event, EventRecorder
from phalanx.operator.evictor import Evictor, Victims, VictimsEvicted
from phalanx.operator.kube.client import (
    APPLY_PATCH,
    MERGE_PATCH,
    STRATEGIC_PATCH,
    UPSTREAM_COMPOSITES,
    UPSTREAM_PODGROUPS,
    Api,
    Reply,
    group_path,
    pod_path,
)

log = structlog.get_logger("phalanx.operator")

OnGang = Callable[[GangWritten], Awaitable[None]]
OnEviction = Callable[[VictimsEvicted], Awaitable[None]]

# Connections held for as long as they run: a LIST or watch per watched kind (Pods,
# PodGroups, Nodes, Kubernetes' PodGroups, five workload kinds) and a LIST's next page.
WATCH_CONNECTIONS = 16


# Statuses written once a cycle, not once a gang: never held back for the bindings.
SUMMARIES = ("queues", "networktopologies")


def background_concurrency(binding_concurrency: int) -> int:
    """Status writes, Events and deletions in flight: a quarter of the bindings' share."""
    return max(4, binding_concurrency // 4)


def connections_needed(binding_concurrency: int) -> int:
    """Connections the client pool must hold so that no request waits for one: every
    binding and background write in flight at once, and every watch. With fewer (it had
    bindings + 9), bindings waited for a connection while status writes held theirs, and
    a gang's bindings landed seconds apart (bench-1000: 2-pod gangs 4 s apart)."""
    return binding_concurrency + background_concurrency(binding_concurrency) + WATCH_CONNECTIONS


@dataclasses.dataclass
class WriteCounts:
    bound: int = 0
    failed: int = 0
    status_writes: int = 0
    deleted: int = 0
    evicted: int = 0


class Writes:
    def __init__(
        self,
        api: Api,
        assumed: AssumedPods,
        concurrency: int,
        clock: Callable[[], float],
        eviction: EvictionMode = EvictionMode.EVICT,
        reply_target_seconds: float | None = None,
        assumed_claims: AssumedClaims | None = None,
    ) -> None:
        self._api = api
        self._clock = clock
        self.binder = GangBinder(api, assumed, concurrency, clock, reply_target_seconds,
                                 assumed_claims)
        self.evictor = Evictor(api, eviction, clock)
        self.background = BackgroundWrites(background_concurrency(concurrency),
                                           quiet=self.binder.quiet)
        self.events = EventRecorder(api)
        self.counts = WriteCounts()
        self._offered: dict[str, Mapping[str, Any]] = {}  # status ref -> last status offered
        # status ref -> Events of offered writes not posted yet: a queued write replaced by a
        # newer one hands its Events on, so "latest wins" never loses an Event
        self._unposted: dict[str, list[Event]] = {}

    def __len__(self) -> int:
        """Writes in flight or queued."""
        return len(self.background)

    # -- bindings --------------------------------------------------------------------------

    def bind_gang(
        self,
        key: str,
        assignments: Mapping[str, str],
        pods: Mapping[str, Body],
        plan: str,
        then: OnGang,
        devices: Mapping[str, str] | None = None,
        claims: GangClaims | None = None,
    ) -> None:
        """Assume the gang's pods on their nodes now; bind them in the background, the
        first with `plan` (the plan annotation's text, "" for none) before the others;
        `then` gets the outcome. `devices`: pod key -> GPU devices chosen (gpu-index
        text), written with the bind or un-gate; `claims`: the gang's DRA claims,
        allocated before the bindings (claim_writes.py)."""
        writes = self.binder.place_gang(key, assignments, pods, plan, devices, claims)

        async def bind() -> None:
            await then(await writes)

        self.background.spawn(bind(), name=f"gang {key}")

    async def bind_now(self, key: str, assignments: Mapping[str, str],
                       pods: Mapping[str, Body],
                       devices: Mapping[str, str] | None = None) -> GangWritten:
        """Bind and wait (finishing a leftover plan, before the cycle plans anything)."""
        return await self.binder.place_gang(key, assignments, pods, devices=devices)

    def count(self, outcome: GangWritten) -> None:
        self.counts.bound += len(outcome.placed)
        self.counts.failed += len(outcome.failed)

    # -- status ----------------------------------------------------------------------------

    def status_changes(self, plural: str, body: Body, desired: Mapping[str, Any]) -> bool:
        """Neither the object nor a write already offered says `desired` (the offered
        write is compared first: a plain ==, where `differs` normalizes both sides, which
        was a fifth of the cycles' time at bench-1000 for statuses already offered)."""
        ref = status_ref(plural, body)
        return self._offered.get(ref) != desired and differs(desired, body.get("status"))

    def as_offered(self, plural: str, body: Body) -> Body:
        """`body` with the status last offered for it (a write may still be queued): what
        the object will show, the base for the next status (a queued write that a newer
        one replaces must not take its news, e.g. the placement, with it)."""
        offered = self._offered.get(status_ref(plural, body))
        return body if offered is None else {**body, "status": offered}

    def status(
        self,
        plural: str,
        body: Body,
        desired: Mapping[str, Any],
        events: Sequence[Event] = (),
    ) -> None:
        """Patch the object's status in the background after posting `events`."""
        ref = status_ref(plural, body)
        self._offered[ref] = desired
        self._unposted.setdefault(ref, []).extend(events)

        async def write() -> None:
            await self._post(self._unposted.pop(ref, []))
            await self._patch_status(ref, plural, body, desired)

        self.background.offer(ref, write, bookkeeping=plural not in SUMMARIES)

    async def _post(self, events: Sequence[Event]) -> None:
        for event in events:
            await self.events.post(event, self._clock())

    async def _patch_status(
        self, ref: str, plural: str, body: Body, desired: Mapping[str, Any]
    ) -> None:
        meta = body.get("metadata", {})
        if plural == UPSTREAM_PODGROUPS and body.get("kind") == "CompositePodGroup":
            plural = UPSTREAM_COMPOSITES  # Kubernetes' composite gangs share their reports
        path = group_path(plural, meta.get("name", ""), meta.get("namespace", ""), "status",
                          api_version=body.get("apiVersion"))
        reply = await self._api.request("PATCH", path, {"status": desired}, MERGE_PATCH)
        self.counts.status_writes += 1
        if not reply.ok:
            if self._offered.get(ref) is desired:
                del self._offered[ref]  # the next cycle tries again
            log.warning("status not written", object=ref, status=reply.status,
                        reason=reply.reason)

    def forget(self, plural: str, live: Collection[str]) -> None:
        """Drop what was offered for objects of `plural` no longer in `live` (keys)."""
        prefix = f"{plural}/"
        for ref in [r for r in self._offered if r.startswith(prefix)]:
            if ref[len(prefix):] not in live:
                del self._offered[ref]

    def pod_condition(
        self, pod: Body, condition: Mapping[str, Any], events: Sequence[Event] = ()
    ) -> None:
        """Set one condition on a pod's status (a strategic merge: the kubelet's conditions
        stay), after posting `events`; latest wins per pod."""
        namespace, name = object_key(pod).split("/", 1)
        ref = f"pods/{namespace}/{name}/status"

        async def write() -> None:
            await self._post(events)
            reply = await self._api.request(
                "PATCH", pod_path(namespace, name, "status"),
                {"status": {"conditions": [condition]}}, STRATEGIC_PATCH)
            self.counts.status_writes += 1
            if not reply.ok and reply.status != 404:
                log.warning("pod condition not written", pod=f"{namespace}/{name}",
                            status=reply.status, reason=reply.reason)

        self.background.offer(ref, write)

    # -- events and deletions --------------------------------------------------------------

    def event(self, event: Event) -> None:
        """Post `event` in the background (the recorder drops a repeat)."""
        async def post() -> None:
            await self.events.post(event, self._clock())

        self.background.spawn(self.background.bounded(post, bookkeeping=True), name="event")

    def delete_pod(self, pod_key: str) -> None:
        """Delete a pod in the background (its controller recreates it)."""
        namespace, name = pod_key.split("/", 1)

        async def delete() -> None:
            reply = await self._api.request("DELETE", pod_path(namespace, name))
            if reply.ok or reply.status == 404:
                self.counts.deleted += 1
            else:
                log.warning("pod not deleted", pod=pod_key, status=reply.status,
                            reason=reply.reason)

        self.background.spawn(self.background.bounded(delete), name=f"delete {pod_key}")

    def evict(self, victims: Victims, pods: Mapping[str, Body], then: OnEviction) -> None:
        """Evict the pods of `victims` in the background; `then` gets the outcome."""
        async def evict() -> None:
            outcome = await self.evictor.evict(victims, pods, self.background.bounded)
            self.counts.evicted += len(outcome.evicted)
            await then(outcome)

        self.background.spawn(evict(), name=f"evict {victims.group or victims.pods[0]}")

    # -- objects Phalanx owns (the PodGroups of automatic gangs) ---------------------------

    def apply(self, path: str, body: Mapping[str, Any], done: Callable[[Reply], None]) -> None:
        """Server-side apply `body` at `path` in the background: created if missing, the
        fields Phalanx set updated, nothing else touched; `done` gets the API server's
        reply (whether it landed, and if not, why)."""
        async def write() -> None:
            query = f"?fieldManager={COMPONENT}&force=true"
            reply = await self._api.request("PATCH", path + query, body, APPLY_PATCH)
            if not reply.ok:
                log.warning("object not applied", object=path, status=reply.status,
                            reason=reply.reason)
            done(reply)

        self.background.spawn(self.background.bounded(write), name=f"apply {path}")

    def delete(self, path: str) -> None:
        """Delete the object at `path` in the background (already gone counts as done)."""
        async def delete() -> None:
            reply = await self._api.request("DELETE", path)
            if not reply.ok and reply.status != 404:
                log.warning("object not deleted", object=path, status=reply.status,
                            reason=reply.reason)

        self.background.spawn(self.background.bounded(delete), name=f"delete {path}")

    # -- lifetime --------------------------------------------------------------------------

    async def settle(self, timeout: float | None = None) -> bool:
        """Wait for the writes started so far; True if they all ended in time."""
        return await self.background.settle(timeout)

    async def close(self, timeout: float) -> None:
        """Let writes in flight finish for up to `timeout` seconds, then cancel the rest
        (a gang cut short is finished from its plan by the next leader)."""
        if not await self.settle(timeout):
            log.warning("writes cancelled at shutdown", left=len(self.background))
        await self.background.cancel()


def status_ref(plural: str, body: Body) -> str:
    return f"{plural}/{object_key(body)}"
