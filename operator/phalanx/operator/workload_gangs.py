"""Automatic gangs: the PodGroups of queue-labelled workloads, kept as they should be.

What a workload's PodGroups should be is `phalanx.workloads` (pure); this only reads the
cache (a workload without a queue label takes its namespace's default queue, if any),
starts the writes (server-side apply, delete) and reports a workload it cannot read as a
Warning Event on it. It runs at the start of every cycle, so it needs no
loop of its own, and only the leader writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

import structlog

from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.names import NAMESPACE_DEFAULT_QUEUE_LABEL, QUEUE_KEY
from phalanx.operator.cache import Body, ClusterCache, Kind, object_key
from phalanx.operator.events import Event
from phalanx.operator.kube.client import Reply, group_path
from phalanx.operator.writes import Writes
from phalanx.workloads import pod_groups_for
from phalanx.workloads.reconcile import changes_for, owned_by

log = structlog.get_logger("phalanx.operator")

REFUSED = (400, 403, 422)  # the API server will not take that body as it is


class WorkloadGangs:
    def __init__(self, writes: Writes) -> None:
        self._writes = writes
        self._applying: dict[str, str] = {}  # PodGroup key -> the body in flight (JSON)
        self.pending: set[str] = set()  # keys of the PodGroups the last sync found missing

    def sync(self, cache: ClusterCache) -> list[Body]:
        """Start the writes that bring every workload's PodGroups up to date. Returns the
        PodGroups wanted but not in the cache yet: the snapshot counts them already, so a
        workload's first pods never start one by one while their PodGroup is created."""
        groups = list(cache.objects(Kind.POD_GROUP))
        present = {object_key(g): g for g in groups}
        pending: list[Body] = []
        for workload in cache.objects(Kind.WORKLOAD):
            try:
                desired = pod_groups_for(with_default_queue(workload, cache))
            except InvalidObject as error:
                self._writes.event(Event(workload, "Warning", "InvalidGang", str(error),
                                         topic="gang"))
                continue
            uid = str(workload.get("metadata", {}).get("uid"))
            wanted = [d for d in desired if self._ours_to_write(workload, d, present, uid)]
            owned = [g for g in groups if owned_by(g, uid)]
            changes = changes_for(wanted, owned)
            for body in changes.apply:
                self._apply(body, workload)
            namespace = str(workload.get("metadata", {}).get("namespace"))
            for name in changes.delete:
                self._writes.delete(group_path("podgroups", name, namespace))
            created = workload.get("metadata", {}).get("creationTimestamp")
            pending.extend(_aged(d, created) for d in wanted if object_key(d) not in present)
        self._forget_landed(present)
        self.pending = {object_key(body) for body in pending}
        return pending

    def _ours_to_write(
        self, workload: Body, desired: Body, present: Mapping[str, Body], uid: str
    ) -> bool:
        """A PodGroup of that name that another owner has (a user's, or one a deleted
        workload of the same name still holds) is left alone, and the workload says why."""
        existing = present.get(object_key(desired))
        if existing is None or owned_by(existing, uid):
            return True
        message = (f"PodGroup {desired['metadata']['name']} exists and is not this "
                   f"workload's; its gang waits until that PodGroup is gone")
        self._writes.event(Event(workload, "Warning", "PodGroupTaken", message, topic="gang"))
        return False

    def _apply(self, body: Body, workload: Body) -> None:
        key = object_key(body)
        text = json.dumps(body, sort_keys=True)
        if self._applying.get(key) == text:
            return  # already on its way; the watch shows it soon
        self._applying[key] = text
        meta = body["metadata"]

        def done(reply: Reply) -> None:
            if reply.ok:
                return
            if self._applying.get(key) == text:
                del self._applying[key]  # the next cycle tries again
            if reply.status in REFUSED:  # the validating webhook's answer, say, to a typo
                message = f"PodGroup {meta['name']} refused: {reply.body.get('message')}"
                self._writes.event(Event(workload, "Warning", "PodGroupRefused", message,
                                         topic="gang"))

        self._writes.apply(group_path("podgroups", meta["name"], meta["namespace"]), body, done)
        log.info("applying workload gang", group=key, min_member=body["spec"]["minMember"])

    def _forget_landed(self, present: Iterable[str]) -> None:
        """Bodies in flight that the cache now shows are no longer in flight."""
        for key in set(self._applying) & set(present):
            del self._applying[key]


def with_default_queue(workload: Body, cache: ClusterCache) -> Body:
    """The workload as `pod_groups_for` reads it: without a queue label of its own, in a
    namespace labelled `scheduling.phalanx.io/default-queue`, it carries that queue."""
    meta = workload.get("metadata", {})
    labels = meta.get("labels") or {}
    if labels.get(QUEUE_KEY):
        return workload
    space = cache.get(Kind.NAMESPACE, str(meta.get("namespace"))) or {}
    default = (space.get("metadata", {}).get("labels") or {}).get(NAMESPACE_DEFAULT_QUEUE_LABEL)
    if not default:
        return workload
    return {**workload, "metadata": {**meta, "labels": {**labels, QUEUE_KEY: default}}}


def _aged(group: Body, created: str | None) -> Body:
    """A PodGroup being created counts as old as its workload (queues admit oldest first)."""
    if not created:
        return group
    return {**group, "metadata": {**group["metadata"], "creationTimestamp": created}}
