"""The admission handlers on the operator's Kopf registry (shell).

Each handler reads what its decision needs and calls the pure decision: the pod's owners
and namespace (`read`, from the API server, so a workload created a moment before its
pods is seen), the Queues (`queues`, the operator's Kopf index, then the API server for a
name the index does not have yet: a Queue applied together with its PodGroup).

The pod handler never refuses and never raises: whatever goes wrong (a slow API server,
an owner it may not read) leaves the pod as it was, as the configuration's failurePolicy
Ignore would, and is logged; the operator then reports such pods (`missed.py`). Its reads
are bounded by `lookup_timeout_seconds`, within the webhook's own timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import kopf
import structlog

from phalanx.config.settings import Settings
from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.inputs import QueueInfo
from phalanx.core.model.names import API_GROUP, DEFAULT_QUEUE, GROUP_VERSION
from phalanx.core.parse.queue import parse_queue
from phalanx.webhooks.names import MUTATE_PODS, VALIDATE_PODGROUPS, VALIDATE_QUEUES
from phalanx.webhooks.owners import MAX_HOPS, controller_of, first_owner
from phalanx.webhooks.podgroups import queue_of, validate_podgroup
from phalanx.webhooks.pods import decide_pod
from phalanx.webhooks.queues import Verdict, validate_queue

log = structlog.get_logger("phalanx.webhooks")

Body = Mapping[str, Any]
Read = Callable[[str], Awaitable[Body | None]]  # an object at an API path; None: absent
Queues = Callable[[], Iterable[Body]]  # the Queues the operator's cache holds


def register_webhooks(
    registry: kopf.OperatorRegistry, settings: Settings, read: Read, queues: Queues
) -> None:
    """Register the three handlers; Kopf serves each at /<id> (`names.py`)."""
    webhook = settings.webhook

    async def mutate_pod(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        namespace = str(body.get("metadata", {}).get("namespace") or "default")
        try:
            async with asyncio.timeout(webhook.lookup_timeout_seconds):
                owners = await owner_chain(body, namespace, read)
                space = await read(f"/api/v1/namespaces/{namespace}") or {}
        except Exception as error:
            log.warning("pod left unchanged: its owners could not be read",
                        namespace=namespace, error=f"{type(error).__name__}: {error}")
            return
        labels = space.get("metadata", {}).get("labels") or {}
        decision = decide_pod(body, owners, labels, settings.mode)
        if decision.changes:
            patch.spec.update(decision.spec)
            log.info("pod sent to phalanx", namespace=namespace,
                     pod=body.get("metadata", {}).get("generateName") or body.metadata.name,
                     why=decision.reason, spec=dict(decision.spec))

    async def validate_group(body: kopf.Body, warnings: list[str], **kwargs: Any) -> None:
        name = queue_of(body)
        known = await _known(name, queues, read, settings.create_default_queue)
        verdict = validate_podgroup(body, kwargs.get("old"), known, webhook.allow_unknown_queues)
        _answer(verdict, warnings)

    async def validate_queue_(body: kopf.Body, warnings: list[str], **_: Any) -> None:
        others = _parsed(queues())
        parent = (body.get("spec") or {}).get("parent")
        if parent and parent not in others:
            found = await read(_queue_path(str(parent)))
            if found is not None:
                others.update(_parsed([found]))
        verdict = validate_queue(body, others, webhook.allow_unknown_queues)
        _answer(verdict, warnings)

    kopf.on.mutate("v1", "pods", id=MUTATE_PODS, operations=["CREATE"],
                   ignore_failures=True, registry=registry)(mutate_pod)
    kopf.on.validate(API_GROUP, "podgroups", id=VALIDATE_PODGROUPS,
                     operations=["CREATE", "UPDATE"], registry=registry)(validate_group)
    kopf.on.validate(API_GROUP, "queues", id=VALIDATE_QUEUES,
                     operations=["CREATE", "UPDATE"], registry=registry)(validate_queue_)


async def owner_chain(pod: Body, namespace: str, read: Read) -> list[Body]:
    """The pod's controllers of the kinds that make gangs, nearest first (`owners.py`)."""
    chain: list[Body] = []
    ref = first_owner(pod, namespace)
    while ref is not None and len(chain) < MAX_HOPS:
        found = await read(ref.path)
        if found is None or (ref.uid and found.get("metadata", {}).get("uid") != ref.uid):
            break
        chain.append(found)
        ref = controller_of(found, namespace)
    return chain


async def _known(name: str, queues: Queues, read: Read, default_made: bool) -> set[str]:
    """The Queue names that exist as far as `name` is concerned."""
    known = {str(q.get("metadata", {}).get("name")) for q in queues()}
    if default_made:
        known.add(DEFAULT_QUEUE)  # the operator creates it when it starts leading
    if name not in known and await read(_queue_path(name)) is not None:
        known.add(name)
    return known


def _parsed(bodies: Iterable[Body]) -> dict[str, QueueInfo]:
    found = {}
    for body in bodies:
        try:
            queue = parse_queue(body)
        except InvalidObject:
            continue  # the operator reports it on its own; it counts as no queue here
        found[queue.name] = queue
    return found


def _queue_path(name: str) -> str:
    return f"/apis/{GROUP_VERSION}/queues/{name}"


def _answer(verdict: Verdict, warnings: list[str]) -> None:
    warnings.extend(verdict.warnings)
    if verdict.refusal is not None:
        raise kopf.AdmissionError(verdict.refusal, code=422)
