"""Carrying out the core's evictions: each victim group's pods through the Eviction API
in the background (a pod condition first), then booked (`EvictionBook`: accepted,
refused by a PodDisruptionBudget, failed), counted and said in Events on the victim's
and the preemptor's groups. A gang evicted for its runtime limit stops its workload first
(workload_stop.py), so no controller makes its pods again."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

import structlog

from phalanx.core.model.eviction import Eviction, EvictionReason
from phalanx.core.model.names import GPU
from phalanx.core.snapshot.gpus import MILLI
from phalanx.core.snapshot.picture import Snapshot
from phalanx.core.timeline.limits import limit_of
from phalanx.observe.logging import group_context
from phalanx.observe.metrics import Metrics
from phalanx.operator.cache import Body, ClusterCache, Kind
from phalanx.operator.compose import eviction_event, eviction_refused_event
from phalanx.operator.evictions import EvictionBook
from phalanx.operator.evictor import Victims, VictimsEvicted, victims_of
from phalanx.operator.workload_stop import WorkloadStopper
from phalanx.operator.writes import Writes

log = structlog.get_logger("phalanx.operator")


class EvictionWrites:
    """The evictions of the cycles, as `Scheduler` hands them over."""

    def __init__(self, cache: ClusterCache, writes: Writes, evicting: EvictionBook,
                 metrics: Metrics, clock: Callable[[], float],
                 stopper: WorkloadStopper | None = None) -> None:
        self._cache = cache
        self._writes = writes
        self._evicting = evicting
        self._metrics = metrics
        self._clock = clock
        self._stopper = stopper

    def evict(
        self, evictions: Sequence[Eviction], snapshot: Snapshot, pods: Mapping[str, Body]
    ) -> None:
        """Carry out the core's evictions not asked for already, a victim group at a time.
        A gang past its runtime limit whose eviction a budget refused (for one of its
        pods: the gang goes whole or not at all) is asked again only after
        `eviction_retry_seconds` (the core asks every cycle; preemption's victims avoid
        refused pods in the core itself)."""
        refused = self._evicting.refused_lately()
        held = {e.group or e.pod for e in evictions
                if e.reason is EvictionReason.RUNTIME_LIMIT and e.pod in refused}
        new = self._evicting.start([e for e in evictions if e.reason is not
                                    EvictionReason.RUNTIME_LIMIT or (e.group or e.pod) not in held])
        if not new:
            return
        keys = {e.pod for e in new}
        gpus: dict[str, float] = {
            p.key: p.requests.get(GPU, 0) / MILLI for p in snapshot.pods if p.key in keys
        }
        for victims in victims_of(new):
            async def done(outcome: VictimsEvicted) -> None:
                self._evicted(outcome, gpus)

            self._writes.evict(self._stopping(victims, snapshot, pods), pods, done)

    def _stopping(
        self, victims: Victims, snapshot: Snapshot, pods: Mapping[str, Body]
    ) -> Victims:
        """A gang evicted for its runtime limit stops its workload before its pods go."""
        if (self._stopper is None or victims.reason is not EvictionReason.RUNTIME_LIMIT
                or victims.group is None):
            return victims
        index = snapshot.index
        limit = limit_of(index.groups.get(victims.group), index.queues)
        bodies = [pods[key] for key in victims.pods if key in pods]
        before = self._stopper.before_eviction(self._group_body(victims.group), bodies, limit)
        return victims if before is None else dataclasses.replace(victims, before=before)

    def _evicted(self, outcome: VictimsEvicted, gpus: Mapping[str, float]) -> None:
        """Book what the API server answered, count it, and say it on the groups."""
        now = self._clock()
        victims = outcome.victims
        for key in outcome.evicted:
            self._evicting.accepted(key, now)
            self._metrics.record_eviction(victims.reason, gpus.get(key, 0))
        for key in outcome.refused:
            self._evicting.refused(key, now)
        for key in [*outcome.failed, *outcome.gone]:
            self._evicting.failed(key)
        for key in victims.pods:  # asked in a dry run only: not evicted, not refused
            if key not in outcome.refused and key not in outcome.evicted:
                self._evicting.failed(key)
        self._metrics.record_eviction_refused(len(outcome.refused))
        with group_context(victims.preemptor):
            log.info("evicted", victim=victims.group or victims.pods[0], reason=victims.reason,
                     evicted=len(outcome.evicted), refused=len(outcome.refused),
                     failed=len(outcome.failed), gone=len(outcome.gone))
        victim = (self._group_body(victims.group) if victims.group
                  else self._cache.get(Kind.POD, victims.pods[0]))
        limit_stop = victims.reason is EvictionReason.RUNTIME_LIMIT and outcome.gone
        if (outcome.evicted or limit_stop) and victim is not None:
            self._writes.event(eviction_event(victim, outcome))
        preemptor = self._group_body(victims.preemptor)
        if outcome.refused and preemptor is not None:
            self._writes.event(eviction_refused_event(preemptor, outcome))

    def _group_body(self, key: str) -> Body | None:
        """A group's object, Phalanx's PodGroup first, then Kubernetes' own."""
        cache = self._cache
        return (cache.get(Kind.POD_GROUP, key) or cache.get(Kind.UPSTREAM_POD_GROUP, key)
                or cache.get(Kind.UPSTREAM_COMPOSITE, key))
