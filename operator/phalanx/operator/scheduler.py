"""One scheduling cycle of the operator: cache -> snapshot -> core -> decisions -> writes.

Orchestration only: every decision is the core's (`run_cycle`), what the objects should
say is composed from those decisions (`reports.py`, `compose.py`), and every write goes
through `Writes` in the background. Order matters: leftover plans are finished first, so
the capacity they hold is reserved (as assumed pods) before the core plans anything
else. A cycle returns once its decisions are made and its gangs' pods assumed;
`settle()` waits for the writes.
"""

from __future__ import annotations

import asyncio
import collections
import http
import time
from collections.abc import Callable, Mapping, Sequence

import structlog

from phalanx.config import Settings
from phalanx.core.admission.node_loss import lost_nodes
from phalanx.core.cycle import run_cycle
from phalanx.core.model.backoff import Backoff
from phalanx.core.model.eviction import Eviction
from phalanx.core.model.names import DEFAULT_QUEUE, GPU, GroupKey
from phalanx.core.model.quantity import whole_number
from phalanx.core.model.result import CycleResult, GroupDecision
from phalanx.core.parse.gpu_share import gpu_index_value
from phalanx.core.parse.upstream import is_upstream
from phalanx.core.snapshot.gpus import MILLI
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.snapshot.picture import Snapshot
from phalanx.observe.frozen_heap import FrozenHeap
from phalanx.observe.gc_pauses import recorded_pauses
from phalanx.observe.logging import cycle_context, group_context
from phalanx.observe.metrics import Metrics
from phalanx.observe.server import Health
from phalanx.operator.assumed import AssumedPods
from phalanx.operator.binder import GangWritten
from phalanx.operator.cache import Body, ByKey, ClusterCache, Kind, object_key
from phalanx.operator.cache_snapshot import (
    Shown,
    Unseen,
    assemble,
    parse_view,
    parsed_objects,
)
from phalanx.operator.capacity import capacity_after
from phalanx.operator.compose import (
    binding_failed_event,
    eviction_event,
    eviction_refused_event,
    group_deleted_event,
    node_failed_event,
)
from phalanx.operator.events import Event
from phalanx.operator.evictions import EvictionBook
from phalanx.operator.evictor import VictimsEvicted, victims_of
from phalanx.operator.kube.client import UPSTREAM_PODGROUPS, Api
from phalanx.operator.nominations import NominationBook
from phalanx.operator.plans import LeftoverAction, Plan, PlanBook, resolve
from phalanx.operator.reports import Reports
from phalanx.operator.upstream_status import released_status
from phalanx.operator.workload_gangs import WorkloadGangs
from phalanx.operator.writes import Writes

log = structlog.get_logger("phalanx.operator")


def failure_label(reason: str) -> str:
    """A low-cardinality label for a failed placement (`409 Conflict` -> `Conflict`)."""
    words = reason.split()
    code = whole_number(words[0]) if words else None
    if code is None:
        return "Unknown"
    if code == 0:
        return "Unreachable"
    try:
        return http.HTTPStatus(code).phrase.replace(" ", "").replace("-", "")
    except ValueError:
        return str(code)


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
        self._gc = recorded_pauses()  # the collector's pauses since the last cycle logged
        self.writes = Writes(api, self.assumed, settings.binding_concurrency, clock,
                             settings.preemption.eviction, settings.binding_reply_target_seconds)
        self.evicting = EvictionBook(settings.preemption.eviction_retry_seconds,
                                     settings.assume_seconds)
        self.nominations = NominationBook()
        self.plans = PlanBook()
        self.reports = Reports(self.writes, self.plans, self.core_config, self.metrics)
        self.workload_gangs = WorkloadGangs(self.writes)
        self.backoffs: dict[GroupKey, Backoff] = {}  # the last cycle's, for the next snapshot
        self.partial_since: dict[GroupKey, float] = {}  # the same
        self.index: ClusterIndex | None = None  # the last cycle's, for the next snapshot
        self._capacity: asyncio.Future[None] | None = None  # the last cycle's capacity report
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
        await self._recover_plans(pods)
        pending_groups = self.workload_gangs.sync(self.cache)
        # Parsing, assembling and the core run in worker threads: the view and the
        # snapshot are their own (nothing else reads or changes them), and meanwhile the
        # event loop keeps answering the writes of earlier cycles and the watches (the
        # interpreter switches threads every few ms). Run on the loop, a 1-3 s cycle at
        # bench-5000 stopped every binding for that long. Only the overlay of this
        # process's own writes is made on the loop, where their books are kept.
        parsed = await asyncio.to_thread(parse_view, self.cache, view, self.settings.mode,
                                         self.settings.namespaces)
        shown = parsed_objects(parsed, self.cache, self.assumed, self.settings.namespaces,
                               pending_groups, Unseen(self.evicting, self.nominations, now))
        snapshot, result, snapshot_seconds = await asyncio.to_thread(
            self._decide, shown, self.evicting.refused_lately(), now)
        self.index = snapshot.index
        decided = self.clock() - now
        self.backoffs = {d.group: d.backoff for d in result.groups if d.backoff is not None}
        self.partial_since = {d.group: d.partial_since for d in result.groups
                              if d.partial_since is not None}
        self.nominations.decided(result)
        self._evict(result.evictions, snapshot, pods)
        placing = self._place(result, pods)
        groups = {object_key(g): g for g in self.cache.objects(Kind.POD_GROUP)}
        upstream = {object_key(g): g for kind in (Kind.UPSTREAM_COMPOSITE, Kind.UPSTREAM_POD_GROUP)
                    for g in self.cache.objects(kind)}  # a PodGroup wins a shared name
        self._release_partial(result, snapshot, {**upstream, **groups}, pods)
        phases = self.reports.groups(result, groups, now, upstream)
        self.reports.missing_groups(result, lambda key: self._pods(snapshot, key, pods))
        self.reports.waiting_pods(result, {**upstream, **groups},
                                  lambda key: self._pods(snapshot, key, pods), now)
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

    def _decide(
        self, shown: Shown, refused: frozenset[str], now: float,
    ) -> tuple[Snapshot, CycleResult, float]:
        """Assemble the snapshot and run the core (in a worker thread): the snapshot, the
        core's result and the seconds from the cycle's start to the snapshot."""
        snapshot = assemble(shown, self.backoffs, refused, self.partial_since, self.index)
        snapshot_seconds = self.clock() - now
        return snapshot, run_cycle(snapshot, self.core_config, now), snapshot_seconds

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
        self.reports.queues(capacity.allocated, phases, self.cache.objects(Kind.QUEUE))
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

    # -- placing ---------------------------------------------------------------------------

    async def _recover_plans(self, pods: Mapping[str, Body]) -> None:
        """Plans this process did not write (a previous leader's); almost every cycle has
        none, so the node names are only gathered when one is found."""
        leftovers = self.plans.leftovers(list(self.cache.objects(Kind.POD_GROUP)))
        if not leftovers:
            return
        nodes = {object_key(n) for n in self.cache.objects(Kind.NODE)}
        for group, plan in leftovers:
            queue = str(group.get("spec", {}).get("queue") or DEFAULT_QUEUE)
            with group_context(object_key(group), queue):
                await self._recover_plan(object_key(group), plan, pods, nodes)

    async def _recover_plan(
        self, key: str, plan: Plan, pods: Mapping[str, Body], nodes: set[str]
    ) -> None:
        resolution = resolve(plan, pods, nodes)
        if resolution.action is not LeftoverAction.FINISH:  # the next status write removes it
            log.info("plan dropped", action=resolution.action.value)
            return
        self.plans.hold(key, plan)  # the status keeps it until the pods are bound
        try:
            outcome = await self.writes.bind_now(key, resolution.remaining, pods, plan.devices)
        finally:
            self.plans.release(key, plan)
        self._count(outcome)
        log.info("plan finished", placed=len(outcome.placed), failed=len(outcome.failed))

    def _place(self, result: CycleResult, pods: Mapping[str, Body]) -> dict[str, int]:
        """Assume every decided gang on its nodes now and write it in the background, its
        plan first (in the group's status write); returns pods per gang started."""
        gangs: dict[str, dict[str, str]] = {}
        devices: dict[str, dict[str, str]] = {}
        for binding in result.bindings:
            gangs.setdefault(binding.group, {})[binding.pod] = binding.node
            if binding.devices:
                devices.setdefault(binding.group, {})[binding.pod] = gpu_index_value(
                    [share.index for share in binding.devices])
        for key, assignments in gangs.items():
            decision = result.decision(key)
            plan, recorded = None, None
            chosen = devices.get(key, {})
            if decision is not None and not decision.implicit and self.cache.get(
                    Kind.POD_GROUP, key) is not None:
                plan, recorded = self.plans.start(key, assignments, chosen)

            grouped = decision is not None and not decision.implicit

            async def written(outcome: GangWritten, key: str = key, plan: Plan | None = plan,
                              gang: Mapping[str, str] = assignments,
                              grouped: bool = grouped) -> None:
                if plan is not None:
                    self.plans.release(key, plan)  # the next status write removes it
                self._count(outcome)
                self._report_gang(outcome, gang if grouped else None, pods)

            self.writes.bind_gang(key, assignments, pods, recorded, written, chosen)
        return {key: len(assignments) for key, assignments in gangs.items()}

    def _count(self, outcome: GangWritten) -> None:
        self.writes.count(outcome)
        for _ in outcome.placed:
            self.metrics.record_binding(True)
        for reason in outcome.failed.values():
            self.metrics.record_binding(False, failure_label(reason))

    def _report_gang(
        self, outcome: GangWritten, gang: Mapping[str, str] | None, pods: Mapping[str, Body]
    ) -> None:
        """One log line per gang written (never one per pod), and an Event on failures.
        `gang`: the pods planned (None for a lone pod, which has no PodGroup)."""
        group = self.cache.get(Kind.POD_GROUP, outcome.group) or self.cache.get(
            Kind.UPSTREAM_POD_GROUP, outcome.group)
        if group is None:
            if outcome.group in self.workload_gangs.pending:
                log.info("gang placed while its PodGroup is created", group=outcome.group,
                         pods=len(outcome.placed), failed=len(outcome.failed))
            elif gang is not None:
                self._group_gone(outcome, gang, pods)
            return
        queue = str(group.get("spec", {}).get("queue") or DEFAULT_QUEUE)
        with group_context(outcome.group, queue):
            if outcome.skipped:
                log.warning("gang not placed", reason=outcome.skipped)
            elif not outcome.failed:
                log.info("gang placed", pods=len(outcome.placed),
                         burst_seconds=round(outcome.seconds, 3), binding_limit=outcome.limit)
            else:
                pod, reason = next(iter(outcome.failed.items()))
                log.warning("gang partly placed", placed=len(outcome.placed),
                            failed=len(outcome.failed), example=f"{pod}: {reason}")
                self.writes.event(binding_failed_event(group, outcome.placed, outcome.failed))

    def _group_gone(
        self, outcome: GangWritten, gang: Mapping[str, str], pods: Mapping[str, Body]
    ) -> None:
        """The PodGroup was deleted while its gang was being placed. Bindings cannot be
        undone and the pods may still be wanted, so the plan is not rolled back; the log
        and an Event on each pod say what was done."""
        bound = set(outcome.placed)
        name = outcome.group.split("/", 1)[-1]
        log.warning("group deleted while its gang was being placed", group=outcome.group,
                    bound=len(bound), not_bound=len(gang) - len(bound))
        for key in sorted(gang):
            body = pods.get(key)
            if body is None:
                continue
            node = gang[key] if key in bound else None
            self.writes.event(group_deleted_event(body, name, len(bound), len(gang), node))

    # -- evicting ---------------------------------------------------------------------------

    def _evict(
        self, evictions: Sequence[Eviction], snapshot: Snapshot, pods: Mapping[str, Body]
    ) -> None:
        """Carry out the core's evictions not asked for already, a victim group at a time."""
        new = self.evicting.start(evictions)
        if not new:
            return
        keys = {e.pod for e in new}
        gpus: dict[str, float] = {
            p.key: p.requests.get(GPU, 0) / MILLI for p in snapshot.pods if p.key in keys
        }
        for victims in victims_of(new):
            async def done(outcome: VictimsEvicted) -> None:
                self._evicted(outcome, gpus)

            self.writes.evict(victims, pods, done)

    def _evicted(self, outcome: VictimsEvicted, gpus: Mapping[str, float]) -> None:
        """Book what the API server answered, count it, and say it on the groups."""
        now = self.clock()
        victims = outcome.victims
        for key in outcome.evicted:
            self.evicting.accepted(key, now)
            self.metrics.record_eviction(victims.reason, gpus.get(key, 0))
        for key in outcome.refused:
            self.evicting.refused(key, now)
        for key in [*outcome.failed, *outcome.gone]:
            self.evicting.failed(key)
        for key in victims.pods:  # asked in a dry run only: not evicted, not refused
            if key not in outcome.refused and key not in outcome.evicted:
                self.evicting.failed(key)
        self.metrics.record_eviction_refused(len(outcome.refused))
        with group_context(victims.preemptor):
            log.info("evicted", victim=victims.group or victims.pods[0], reason=victims.reason,
                     evicted=len(outcome.evicted), refused=len(outcome.refused),
                     failed=len(outcome.failed), gone=len(outcome.gone))
        victim = (self._group_body(victims.group) if victims.group
                  else self.cache.get(Kind.POD, victims.pods[0]))
        if outcome.evicted and victim is not None:
            self.writes.event(eviction_event(victim, outcome))
        preemptor = self._group_body(victims.preemptor)
        if outcome.refused and preemptor is not None:
            self.writes.event(eviction_refused_event(preemptor, outcome))

    def _group_body(self, key: str) -> Body | None:
        """A group's object, Phalanx's PodGroup first, then Kubernetes' own."""
        return (self.cache.get(Kind.POD_GROUP, key) or self.cache.get(Kind.UPSTREAM_POD_GROUP, key)
                or self.cache.get(Kind.UPSTREAM_COMPOSITE, key))

    def _release_partial(
        self,
        result: CycleResult,
        snapshot: Snapshot,
        groups: Mapping[str, Body],
        pods: Mapping[str, Body],
    ) -> None:
        """Carry out the cycle's partial-gang releases (decided by the core: partial.py),
        of either PodGroup kind (`groups`: Phalanx's, and Kubernetes' own where Phalanx
        has none of that name); and say which of a gang's nodes failed."""
        for decision in result.groups:
            group = groups.get(decision.group)
            if group is not None and not decision.implicit:
                self._report_lost_nodes(decision, group, snapshot, pods)
        for release in result.releases:
            group = groups.get(release.group)
            if group is None:
                continue
            event = Event(group, "Warning", release.reason, release.message, topic="partial")
            for key in release.pods:
                self.writes.delete_pod(key)
            status = released_status(group, event.message, result.now) if (
                release.pods and is_upstream(group)) else None
            if status is None:
                self.writes.event(event)
            else:  # Kubernetes' PodGroup: no longer scheduled, with the Event
                self.writes.status(UPSTREAM_PODGROUPS, group, status, (event,))

    def _report_lost_nodes(
        self, decision: GroupDecision, group: Body, snapshot: Snapshot, pods: Mapping[str, Body]
    ) -> None:
        placed = self._pods(snapshot, decision.group, pods, waiting=False)
        # The placement outlives pods evicted from a failed node; Kubernetes' own
        # PodGroups have none, their pods still on the node name it.
        placement = (group.get("status") or {}).get("placement") or {}
        on_nodes = [str(p.get("spec", {}).get("nodeName")) for p in placed]
        members = snapshot.index.members.get(GroupKey(decision.group))
        tolerations = [p.tolerations for p in members.pods] if members else []
        lost = lost_nodes([*(placement.get("nodes") or ()), *on_nodes], snapshot.index,
                          tolerations)
        if lost:
            self.writes.event(node_failed_event(group, lost, decision, placed))

    @staticmethod
    def _pods(
        snapshot: Snapshot, key: str, pods: Mapping[str, Body], waiting: bool = True
    ) -> Sequence[Body]:
        """The group's waiting pods (or its unfinished pods on nodes), as cached bodies."""
        members = snapshot.index.members.get(GroupKey(key))
        if members is None:  # a lone pod of ours is a group of one
            single = snapshot.index.singles.get(GroupKey(key)) if waiting else None
            return [pods[single.key]] if single is not None and single.key in pods else []
        infos = members.waiting if waiting else members.running
        return [pods[info.key] for info in infos if info.key in pods]

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
