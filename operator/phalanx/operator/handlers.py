"""Kopf registrations: indexes and event handlers only, which never write to what they watch.

Queues, NetworkTopologies and PriorityClasses are indexed (`@kopf.index`): Kopf keeps one
slimmed body per object, drops it on deletion, and holds back all other handlers until
every index is listed. So the first event handler call means these indexes are complete.
Pods, PodGroups and Nodes, the numerous kinds, bypass Kopf (raw_watch.py): Kopf's start-up
wakes every object's worker each time an index changes, quadratic in the number of objects
(about ten seconds of a core at 1,000 Nodes before the first cycle). PriorityClasses always
exist (the API server creates two), so "the first event handler call" still comes in every
cluster. No handler does scheduling work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Any

import kopf
import structlog

from phalanx.operator.cache import Kind, Store, object_key, slim
from phalanx.operator.settings import API_GROUP

log = structlog.get_logger("phalanx.operator")

RESOURCES: dict[Kind, tuple[str, ...]] = {
    Kind.QUEUE: (API_GROUP, "queues"),
    Kind.NETWORK_TOPOLOGY: (API_GROUP, "networktopologies"),
    Kind.PRIORITY_CLASS: ("scheduling.k8s.io", "priorityclasses"),
}


async def index_body(body: kopf.Body, **_: Any) -> dict[Hashable, Any]:
    """Async on purpose: Kopf runs sync handlers in a thread pool, one hop per watch event."""
    return {object_key(body): slim(body)}


def register(
    registry: kopf.OperatorRegistry,
    stores: dict[Kind, Store],
    on_change: Any,
    on_startup: Any,
    on_cleanup: Any,
) -> None:
    """Register handlers on `registry`; `stores` is filled with Kopf's index objects
    (all kinds but Pods, PodGroups and Nodes).

    `on_change` marks the cache complete and pokes the loop.
    """

    async def startup(**kwargs: Any) -> None:
        for kind in RESOURCES:
            stores[kind] = kwargs[kind.value]
        await on_startup()

    async def cleanup(**_: Any) -> None:
        await on_cleanup()

    kopf.on.startup(registry=registry)(startup)
    kopf.on.cleanup(registry=registry)(cleanup)

    for kind, (group, plural) in RESOURCES.items():
        kopf.index(group, plural, id=kind.value, registry=registry)(index_body)
        kopf.on.event(group, plural, id=f"{kind.value}_events", registry=registry)(
            _poker(on_change)
        )


def _poker(on_change: Any) -> Any:
    async def poke(**_: Any) -> None:
        on_change()
        await asyncio.sleep(0)

    return poke
