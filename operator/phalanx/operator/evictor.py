"""Carrying out the core's evictions, one victim group at a time, as kube-scheduler does.

Per pod: the `DisruptionTarget` condition (reason `PreemptionByScheduler`, the message
naming the preemptor) is added first, so whoever watches the pod (its Job controller, its
user) knows why it goes; then the pod is evicted through the Eviction API (`policy/v1`),
which honours PodDisruptionBudgets, or deleted when the `eviction` setting says
`delete`. Every request names the pod's uid, so a new pod of the same name is never hit.

A victim group is evicted whole or not at all as far as a budget can tell beforehand:
every pod's eviction is first asked as a dry run, and one refusal (HTTP 429) refuses the
whole group, so a budget never leaves a gang cut below its minimum by the preemption.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from phalanx.config import EvictionMode
from phalanx.core.model.eviction import Eviction, EvictionReason
from phalanx.core.model.names import COMPONENT, GroupKey
from phalanx.operator.cache import Body
from phalanx.operator.events import MAX_MESSAGE, timestamp
from phalanx.operator.kube.client import Api, Reply, pod_path

STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
TOO_MANY_REQUESTS = 429  # the Eviction API's answer when a PodDisruptionBudget forbids it

Bounded = Callable[[Callable[[], Awaitable[Reply]]], Awaitable[Reply]]


@dataclasses.dataclass(frozen=True)
class Victims:
    """The pods one preemptor evicts from one victim group (or one lone pod), one reason.
    `before`: run once no budget refuses, before the first pod is evicted (a gang past its
    runtime limit stops its workload then, so its controller makes no pod again)."""

    group: GroupKey | None
    preemptor: GroupKey
    reason: EvictionReason
    message: str
    pods: tuple[str, ...]
    before: Callable[[Bounded], Awaitable[None]] | None = dataclasses.field(
        default=None, compare=False)


def victims_of(evictions: Sequence[Eviction]) -> list[Victims]:
    """The core's evictions grouped by victim group and preemptor, in the core's order."""
    batches: dict[tuple[str, str, str, str], list[str]] = {}
    for e in evictions:
        batches.setdefault((e.group or e.pod, e.preemptor, e.reason, e.message), []).append(e.pod)
    first: dict[str, Eviction] = {e.group or e.pod: e for e in evictions}
    return [
        Victims(first[who].group, GroupKey(preemptor), EvictionReason(reason), message,
                tuple(pods))
        for (who, preemptor, reason, message), pods in batches.items()
    ]


@dataclasses.dataclass(frozen=True)
class VictimsEvicted:
    victims: Victims
    evicted: tuple[str, ...] = ()
    refused: Mapping[str, str] = dataclasses.field(default_factory=dict)  # pod -> reason
    failed: Mapping[str, str] = dataclasses.field(default_factory=dict)  # pod -> reason
    gone: tuple[str, ...] = ()  # not there any more (nothing to evict)


def condition_patch(message: str, now: float) -> dict[str, Any]:
    """The pod's DisruptionTarget condition (a strategic merge patch keyed by type)."""
    return {"status": {"conditions": [{
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": PREEMPTION_BY_SCHEDULER,
        "message": f"{COMPONENT}: {message}"[:MAX_MESSAGE],
        "lastTransitionTime": timestamp(now),
    }]}}


def eviction_body(namespace: str, name: str, uid: str | None, dry_run: bool) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if uid:
        options["preconditions"] = {"uid": uid}
    if dry_run:
        options["dryRun"] = ["All"]
    return {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace}, "deleteOptions": options}


class Evictor:
    def __init__(self, api: Api, mode: EvictionMode, clock: Callable[[], float]) -> None:
        self._api = api
        self._mode = mode
        self._clock = clock

    async def evict(
        self, victims: Victims, pods: Mapping[str, Body], bounded: Bounded
    ) -> VictimsEvicted:
        """Evict every pod of `victims` (each request through `bounded`)."""
        present = {key: pods[key] for key in victims.pods if key in pods}
        gone = tuple(key for key in victims.pods if key not in pods)
        if self._mode is EvictionMode.EVICT:
            refused = await self._dry_run(present, bounded)
            if refused:
                return VictimsEvicted(victims, refused=refused, gone=gone)
        if victims.before is not None and present:
            replies = await self._before_then_evict(victims, present, bounded, victims.before)
        else:
            replies = await asyncio.gather(*(
                self._evict_pod(key, body, victims.message, bounded)
                for key, body in present.items()))
        evicted, refused, failed = [], {}, {}
        for key, reply in zip(present, replies, strict=True):
            if reply.ok:
                evicted.append(key)
            elif reply.status in (404, 409):  # gone, or another pod of that name now
                gone += (key,)
            elif reply.status == TOO_MANY_REQUESTS:
                refused[key] = reply.reason
            else:
                failed[key] = f"{reply.status} {reply.reason}"
        return VictimsEvicted(victims, tuple(evicted), refused, failed, gone)

    async def _dry_run(self, pods: Mapping[str, Body], bounded: Bounded) -> dict[str, str]:
        """Pods a budget would not let go now (asked without acting)."""
        def ask(key: str, body: Body) -> Awaitable[Reply]:
            return bounded(lambda: self._post_eviction(key, body, dry_run=True))

        replies = await asyncio.gather(*(ask(key, body) for key, body in pods.items()))
        return {key: reply.reason for key, reply in zip(pods, replies, strict=True)
                if reply.status == TOO_MANY_REQUESTS}

    async def _before_then_evict(
        self, victims: Victims, present: Mapping[str, Body], bounded: Bounded,
        before: Callable[[Bounded], Awaitable[None]],
    ) -> list[Reply]:
        """Every pod marked, then `before` (stopping the workload, whose controller may
        delete the pods itself at once: they already say why), then the evictions."""
        marks = await asyncio.gather(
            *(self._mark(key, victims.message, bounded) for key in present))
        await before(bounded)

        async def evict(key: str, body: Body, marked: Reply) -> Reply:
            return await self._remove(key, body, bounded) if marked.ok else marked

        return list(await asyncio.gather(
            *(evict(key, body, marked) for (key, body), marked
              in zip(present.items(), marks, strict=True))))

    async def _evict_pod(self, key: str, body: Body, message: str, bounded: Bounded) -> Reply:
        marked = await self._mark(key, message, bounded)
        return await self._remove(key, body, bounded) if marked.ok else marked

    async def _mark(self, key: str, message: str, bounded: Bounded) -> Reply:
        """The pod's DisruptionTarget condition, saying why it goes."""
        namespace, name = key.split("/", 1)

        async def mark() -> Reply:
            return await self._api.request(
                "PATCH", pod_path(namespace, name, "status"),
                condition_patch(message, self._clock()), STRATEGIC_MERGE_PATCH)

        return await bounded(mark)

    async def _remove(self, key: str, body: Body, bounded: Bounded) -> Reply:
        """The eviction (or the deletion, as the `eviction` setting says)."""
        if self._mode is EvictionMode.DELETE:
            return await bounded(lambda: self._delete(key, body))
        return await bounded(lambda: self._post_eviction(key, body, dry_run=False))

    async def _post_eviction(self, key: str, body: Body, dry_run: bool) -> Reply:
        namespace, name = key.split("/", 1)
        uid = body.get("metadata", {}).get("uid")
        return await self._api.request(
            "POST", pod_path(namespace, name, "eviction"),
            eviction_body(namespace, name, uid, dry_run))

    async def _delete(self, key: str, body: Body) -> Reply:
        namespace, name = key.split("/", 1)
        uid = body.get("metadata", {}).get("uid")
        options = {"apiVersion": "v1", "kind": "DeleteOptions",
                   **({"preconditions": {"uid": uid}} if uid else {})}
        return await self._api.request("DELETE", pod_path(namespace, name), options)
