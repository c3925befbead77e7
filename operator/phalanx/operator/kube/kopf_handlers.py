"""Kopf registrations: indexes and event handlers only, which never write to what they watch.

Queues, NetworkTopologies, PriorityClasses and Namespaces are indexed (`@kopf.index`): Kopf
keeps one slimmed body per object, drops it on deletion, and holds back all other handlers until
every index is listed. So the first event handler call means these indexes are complete.
Pods, PodGroups and Nodes, the numerous kinds, bypass Kopf (raw_watch.py): Kopf's start-up
wakes every object's worker each time an index changes, quadratic in the number of objects
(about ten seconds of a core at 1,000 Nodes before the first cycle). PriorityClasses always
exist (the API server creates two), so "the first event handler call" still comes in every
cluster. No handler does scheduling work.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable
from typing import Any

import kopf
import structlog

from phalanx.core.model.names import API_GROUP
from phalanx.operator.cache import Kind, Store, object_key, slim

log = structlog.get_logger("phalanx.operator")

RESOURCES: dict[Kind, tuple[str, ...]] = {
    Kind.QUEUE: (API_GROUP, "queues"),
    Kind.NETWORK_TOPOLOGY: (API_GROUP, "networktopologies"),
    Kind.PRIORITY_CLASS: ("scheduling.k8s.io", "priorityclasses"),
    Kind.NAMESPACE: ("", "namespaces"),  # few; their labels name default queues
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


def kopf_settings() -> kopf.OperatorSettings:
    """Kopf settings that write nothing onto what Kopf watches.

    Kopf watches only Queues, NetworkTopologies and PriorityClasses (Pods, PodGroups and
    Nodes come from `raw_watch.py`), with index and event handlers that never patch. Kopf's
    bookkeeping (progress, diff base) would only concern change handlers, which Phalanx
    does not register; it is still kept in Phalanx-prefixed annotations so it is
    recognisable. Kopf's own k8s Events are off (Phalanx posts its own, on PodGroups).
    Peering is off: replicas elect one leader through a Lease (`phalanx.leader`); even a
    second active one cannot double-bind, because the API server refuses a binding to an
    already bound pod.
    """
    settings = kopf.OperatorSettings()
    settings.posting.enabled = False
    settings.posting.level = logging.WARNING
    settings.peering.standalone = True
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=API_GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=API_GROUP, key="last-handled-configuration"
    )
    settings.persistence.finalizer = f"{API_GROUP}/operator"
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 10
    settings.networking.request_timeout = 30
    # A busy API server answers 429 "storage is (re)initializing" while it builds a
    # resource's watch cache; Kopf's default waits between tries (1, 1, 2, 3, 5, 8, 13,
    # 21 s) could leave the operator idle up to 8 s after the cache was ready, and the
    # first cycle waits for Kopf's lists (bench-5000: Queues retried for 23 s).
    settings.networking.error_backoffs = [0.5, 0.5, 1, 1, 1, 2, 2, 2, 3, 5, 8]
    # Never SIGKILL the process on a cancelled shutdown (in-process operators in tests/demo).
    settings.process.ultimate_exiting_timeout = None
    return settings
