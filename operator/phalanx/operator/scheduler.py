"""One scheduling cycle of the operator: cache -> snapshot -> core -> decisions -> writes.

Orchestration only: every decision is the core's (`run_cycle`), what the objects should
say is composed from those decisions (`reports.py`, `compose.py`), and every write goes
through `Writes` in the background; carrying the decisions out is one module per kind
(`gang_writes.py` the bindings and leftover plans, `eviction_writes.py` the evictions,
`releases.py` the partial-gang releases). Order matters: leftover plans are finished
first, so the capacity they hold is reserved (as assumed pods) before the core plans
anything else. A cycle returns once its decisions are made and its gangs' pods assumed;
`settle()` waits for the writes.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence

import structlog

from phalanx.config import Settings
from phalanx.core.cycle import run_cycle
from phalanx.core.model.backoff import Backoff
from phalanx.core.model.names import GroupKey
from phalanx.core.model.result import CycleResult
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.snapshot.picture import Snapshot
from phalanx.observe.frozen_heap import FrozenHeap
from phalanx.observe.gc_pauses import recorded_pauses
from phalanx.observe.logging import cycle_context
from phalanx.observe.metrics import Metrics
from phalanx.observe.server import Health
from phalanx.operator.assumed import AssumedPods
from phalanx.operator.assumed_claims import AssumedClaims
from phalanx.operator.cache import ByKey, ClusterCache, Kind, object_key
from phalanx.operator.cache_snapshot import (
    ParsedView,
    Shown,
    Unseen,
    assemble,
    group_pods,
    parse_view,
    parsed_objects,
)
from phalanx.operator.capacity import capacity_after
from phalanx.operator.claim_recovery import ClaimRecovery
from phalanx.operator.eviction_writes import EvictionWrites
from phalanx.operator.evictions import EvictionBook
from phalanx.operator.gang_writes import GangWrites
from phalanx.operator.kube.client import Api
from phalanx.operator.nominations import NominationBook
from phalanx.operator.plans import PlanBook
from phalanx.operator.queue_usage import UsageBook
from phalanx.operator.releases import Releases
from phalanx.operator.reports import Reports
from phalanx.operator.webhook_missed import MissedPods
from phalanx.operator.workload_gangs import WorkloadGangs
from phalanx.operator.workload_stop import WorkloadStopper
from phalanx.operator.writes import Writes

log = structlog.get_logger("phalanx.operator")


class Scheduler:
    def __init__(
        self,
        cache: ClusterCache,
        api: Api,
        settings: Settings | None = None,
        clock: Callable[[], float] = time.time,
        metrics: Metrics | None = None,
        health: Health | None = None,
        heap: FrozenHeap | None = None,
    ) -> None:
        """`heap`: frozen at each cycle's start (frozen_heap.py); None in tests that share
        their process's collector with other things."""
        self.cache = cache
        self._heap = heap
        self.settings = settings = settings or Settings()
        self.core_config = settings.scheduler_config()
        self.clock = clock
        self.metrics = metrics or Metrics()
        self.health = health or Health()
        self.assumed = AssumedPods(settings.assume_seconds)
        self.assumed_claims = AssumedClaims(settings.assume_seconds)
        self._gc = recorded_pauses()  # the collector's pauses since the last cycle logged
        self.writes = Writes(api, self.assumed, settings.binding_concurrency, clock,
                             settings.preemption.eviction, settings.binding_reply_target_seconds,
                             self.assumed_claims)
        self.claim_recovery = ClaimRecovery(api, self.assumed_claims, clock)
        self.evicting = EvictionBook(settings.preemption.eviction_retry_seconds,
                                     settings.assume_seconds)
        self.nominations = NominationBook()
        self.plans = PlanBook(settings.partial_grace_seconds)
        self.reports = Reports(self.writes, self.core_config, self.metrics)
        self.workload_gangs = WorkloadGangs(self.writes)
        self.missed_pods = MissedPods(self.writes)
        self.gangs = GangWrites(cache, self.writes, self.plans, self.metrics,
                                self.workload_gangs)
        self.evictions = EvictionWrites(cache, self.writes, self.evicting, self.metrics, clock,
                                        WorkloadStopper(api, cache, self.writes.event))
        self.releases = Releases(self.writes)
        self.usage = UsageBook(settings.fair_sharing.usage_half_life_seconds,
                               settings.fair_sharing.usage_write_seconds)
        self.backoffs: dict[GroupKey, Backoff] = {}  # the last cycle's, for the next snapshot
        self.partial_since: dict[GroupKey, float] = {}  # the same
        self.index: ClusterIndex | None = None  # the last cycle's, for the next snapshot
        self._capacity: asyncio.Future[None] | None = None  # the last cycle's capacity report
        self._estimated_at: float | None = None  # when the last estimate of starts was made
        self.cycles = 0

    async def cycle(self) -> CycleResult:
        """Decide and start the writes; they continue after the cycle returns."""
        with cycle_context(self.cycles + 1):
            return await self._cycle()

    async def settle(self, timeout: float | None = None) -> bool:
        """Wait for the last capacity report and the writes started so far; True if they
        all ended in time."""
        await self.capacity_reported()
        return await self.writes.settle(timeout)

    async def close(self, timeout: float) -> None:
        await self.capacity_reported()
        await self.writes.close(timeout)

    async def _cycle(self) -> CycleResult:
        await self.capacity_reported()  # the last cycle's: its writes before this cycle's
        if self._heap is not None:
            self._heap.cycle_started()
        now = self.clock()
        view = self.cache.view()
        pods = ByKey(view.get(Kind.POD, {}))
        self.assumed.expire(pods, now)
        self.evicting.expire(pods, now)
        await self.gangs.recover_plans(pods, now)
        if self.settings.mode.binds:  # gate mode: kube-scheduler's claims, not ours
            claims = view.get(Kind.RESOURCE_CLAIM, {})
            await self.claim_recovery.recover(
                [body for key in claims for body in claims[key]], pods, self.assumed)
        pending_groups = self.workload_gangs.sync(self.cache)
        # Parsing, assembling and the core run in worker threads: the view and the
        # snapshot are their own (nothing else reads or changes them), and meanwhile the
        # event loop keeps answering the writes of earlier cycles and the watches (the
        # interpreter switches threads every few ms). Run on the loop, a 1-3 s cycle at
        # bench-5000 stopped every binding for that long. Only the overlay of this
        # process's own writes is made on the loop, where their books are kept.
        with self._heap.deciding() if self._heap is not None else contextlib.nullcontext():
            parsed = await asyncio.to_thread(parse_view, self.cache, view, self.settings.mode,
                                             self.settings.namespaces)
            parsed = self._claims_shown(parsed, now)
            shown = parsed_objects(parsed, self.cache, self.assumed, self.settings.namespaces,
                                   pending_groups, Unseen(self.evicting, self.nominations, now))
            estimate = self._estimate_due(now)
            snapshot, result, snapshot_seconds = await asyncio.to_thread(
                self._decide, shown, self.evicting.refused_lately(), now, estimate)
        self.index = snapshot.index
        decided = self.clock() - now
        self.backoffs = {d.group: d.backoff for d in result.groups if d.backoff is not None}
        self.partial_since = {d.group: d.partial_since for d in result.groups
                              if d.partial_since is not None}
        self.nominations.decided(result)
        self.evictions.evict(result.evictions, snapshot, pods)
        placing = self.gangs.place(result, pods, now, snapshot.dra)
        groups = {object_key(g): g for g in self.cache.objects(Kind.POD_GROUP)}
        upstream = {object_key(g): g for kind in (Kind.UPSTREAM_COMPOSITE, Kind.UPSTREAM_POD_GROUP)
                    for g in self.cache.objects(kind)}  # a PodGroup wins a shared name
        phases = self.reports.groups(result, groups, now, upstream, estimated=estimate)
        # after the reports: a released upstream gang's status is composed on theirs
        self.releases.release_partial(result, snapshot, {**upstream, **groups}, pods)
        self.reports.missing_groups(result, lambda key: group_pods(snapshot, key, pods))
        if self.settings.webhook.enabled:
            await self.missed_pods.report(view.get(Kind.POD, {}), groups, now)
        self.reports.waiting_pods(result, {**upstream, **groups},
                                  lambda key: group_pods(snapshot, key, pods), now)
        self.metrics.set_group_phases(collections.Counter((p, q) for q, p in phases))
        self._capacity = asyncio.ensure_future(
            self._report_capacity(snapshot, result, phases, now))
        self.reports.forget(groups, upstream)
        self.cycles += 1
        self._log(result, placing, now, decided, snapshot_seconds)
        self.metrics.observe_cycle(self.clock() - now)
        self.metrics.set_binding_limit(self.writes.binder.in_flight_limit)
        self.health.beat()
        return result

    def _claims_shown(self, parsed: ParsedView, now: float) -> ParsedView:
        """The claims this process allocated or freed, as written (assumed_claims.py)."""
        self.assumed_claims.expire(parsed.others, now)
        if not len(self.assumed_claims):
            return parsed
        return dataclasses.replace(
            parsed, others=[self.assumed_claims.shown(item) for item in parsed.others])

    def _estimate_due(self, now: float) -> bool:
        """Whether this cycle estimates the waiting gangs' starts: the first cycle, then
        at most every `estimate_interval_seconds` (an estimate places every waiting gang
        again, and the starts move only as work ends)."""
        last = self._estimated_at
        if last is not None and now - last < self.settings.estimate_interval_seconds:
            return False
        self._estimated_at = now
        return True

    def _decide(
        self, shown: Shown, refused: frozenset[str], now: float, estimate: bool = False,
    ) -> tuple[Snapshot, CycleResult, float]:
        """Assemble the snapshot and run the core (in a worker thread): the snapshot, the
        core's result and the seconds from the cycle's start to the snapshot."""
        snapshot = assemble(shown, self.backoffs, refused, self.partial_since, self.index,
                            self.settings.dra.class_resources)
        snapshot_seconds = self.clock() - now
        result = run_cycle(snapshot, self.core_config, now, estimate=estimate)
        return snapshot, result, snapshot_seconds

    async def _report_capacity(
        self, snapshot: Snapshot, result: CycleResult, phases: Sequence[tuple[str, str]],
        now: float,
    ) -> None:
        """What the cluster holds once this cycle's pods are bound: GPU usage, Queue and
        NetworkTopology status. The figures are computed in a worker thread while the
        loop sends the cycle's writes (see capacity.py); only their writes are offered
        here."""
        names = [object_key(t) for t in self.cache.objects(Kind.NETWORK_TOPOLOGY)]
        capacity = await asyncio.to_thread(capacity_after, snapshot, result.bindings, names)
        usage = capacity.usage
        self.metrics.set_gpu_usage(usage.allocated, usage.free, usage.free_unusable_whole_node)
        queues = list(self.cache.objects(Kind.QUEUE))
        fair = self.usage.advance(queues, capacity.amounts, now)
        self.reports.queues(capacity.allocated, phases, queues, fair)
        self.reports.topologies(capacity.topologies,
                                self.cache.objects(Kind.NETWORK_TOPOLOGY), now)

    async def capacity_reported(self) -> None:
        """Wait for the last cycle's capacity report to be computed and its writes
        offered, if any; a failed one is logged (a report must not stop the scheduling)."""
        report, self._capacity = self._capacity, None
        if report is None:
            return
        try:
            await report
        except Exception:
            log.exception("capacity report failed")

    def _log(
        self, result: CycleResult, placing: Mapping[str, int], now: float, decided: float,
        snapshot_seconds: float,
    ) -> None:
        waiting = sum(1 for d in result.groups if not d.scheduled)
        if placing or self.cycles % 60 == 1:
            paused = self._gc.since()
            log.info("cycle", cycle=self.cycles, groups=len(result.groups),
                     waiting=waiting, gangs_started=len(placing),
                     pods_started=sum(placing.values()), assumed=len(self.assumed),
                     writes_in_flight=len(self.writes), invalid=len(result.invalid),
                     binding_limit=self.writes.binder.in_flight_limit,
                     binding_held=self.writes.binder.in_flight_held,
                     seconds=round(self.clock() - now, 3), decide_seconds=round(decided, 3),
                     snapshot_seconds=round(snapshot_seconds, 3),
                     gc_seconds=round(paused.seconds, 3), gc_full=paused.full,
                     gc_longest=round(paused.longest, 3))
