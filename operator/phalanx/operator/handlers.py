"""Kopf registrations: indexes and event handlers only, which never write to what they watch.

Nodes, Queues, NetworkTopologies and PriorityClasses are indexed (`@kopf.index`): Kopf
keeps one slimmed body per object, drops it on deletion, and holds back all other
handlers until every index is listed. So the first event handler call means these
indexes are complete. Pods and PodGroups, by far the most frequent events, bypass Kopf
(raw_watch.py). Nodes have no event handler: their index handler pokes the loop itself.
The other kinds keep an event handler, and PriorityClasses always exist (the API server
creates two), so "the first event handler call" still comes in every cluster.
No handler does scheduling work.
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
    Kind.NODE: ("v1", "nodes"),
    Kind.QUEUE: (API_GROUP, "queues"),
    Kind.NETWORK_TOPOLOGY: (API_GROUP, "networktopologies"),
    Kind.PRIORITY_CLASS: ("scheduling.k8s.io", "priorityclasses"),
}


async def index_body(body: kopf.Body, **_: Any) -> dict[Hashable, Any]:
    """Async on purpose: Kopf runs sync handlers in a thread pool, one hop per watch event."""
    return {object_key(body): slim(body)}


POKED_BY_INDEX = frozenset({Kind.NODE})


def _poking_index(on_indexed: Any) -> Any:
    async def index_and_poke(body: kopf.Body, **_: Any) -> dict[Hashable, Any]:
        on_indexed()
        return {object_key(body): slim(body)}

    return index_and_poke


def register(
    registry: kopf.OperatorRegistry,
    stores: dict[Kind, Store],
    on_change: Any,
    on_startup: Any,
    on_cleanup: Any,
    on_indexed: Any = None,
) -> None:
    """Register handlers on `registry`; `stores` is filled with Kopf's index objects
    (all kinds but Pods and PodGroups).

    `on_change` marks the cache complete and pokes the loop; `on_indexed` only pokes it
    (it is called while the indexes are still being listed).
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
        if on_indexed is not None and kind in POKED_BY_INDEX:
            kopf.index(group, plural, id=kind.value, registry=registry)(_poking_index(on_indexed))
            continue
        kopf.index(group, plural, id=kind.value, registry=registry)(index_body)
        kopf.on.event(group, plural, id=f"{kind.value}_events", registry=registry)(
            _poker(on_change)
        )


def _poker(on_change: Any) -> Any:
    async def poke(**_: Any) -> None:
        on_change()
        await asyncio.sleep(0)

    return poke
