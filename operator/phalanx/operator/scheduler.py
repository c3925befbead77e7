"""One scheduling cycle of the operator: snapshot, core, writes, status, events.

Order matters: leftover plans are finished first, so the capacity they hold is
reserved (as assumed pods) before the core plans anything else. The cycle's writes run
in the background (`background.py`): a cycle returns once its decisions are made and
its gangs' pods assumed, and `settle()` waits for the writes.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import datetime
import http
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import structlog

from phalanx.core.config import SchedulerConfig
from phalanx.core.cycle import run_cycle
from phalanx.core.result import CycleResult, GroupDecision
from phalanx.core.snapshot import Snapshot, with_bindings
from phalanx.core.status import Reason
from phalanx.observe.gpu_usage import gpu_usage
from phalanx.observe.logging import cycle_context, group_context
from phalanx.observe.metrics import Metrics
from phalanx.observe.server import Health
from phalanx.operator.assumed import AssumedPods
from phalanx.operator.background import BackgroundWrites
from phalanx.operator.binder import GangOutcome, Writer
from phalanx.operator.cache import Body, ClusterCache, Kind, object_key
from phalanx.operator.client import MERGE_PATCH, Api, group_path
from phalanx.operator.events import Event, EventRecorder
from phalanx.operator.plans import Outcome, Plan, decode_plan, resolve
from phalanx.operator.pods import (
    group_key_of,
    has_controller,
    is_bound,
    is_terminal,
    pod_key,
)
from phalanx.operator.settings import OperatorConfig
from phalanx.operator.snapshot import ParseMemo, take_snapshot
from phalanx.operator.status import differs, podgroup_status, queue_status
from phalanx.operator.topology_status import allocated_by_queue, topology_status

log = structlog.get_logger("phalanx.operator")


@dataclasses.dataclass
class Backoff:
    delay: float
    until: float


@dataclasses.dataclass
class Counters:
    cycles: int = 0
    bound: int = 0
    failed: int = 0
    status_writes: int = 0
    released: int = 0


def queue_of(group: Body) -> str:
    return str(group.get("spec", {}).get("queue") or "default")


def failure_label(reason: str) -> str:
    """A low-cardinality label for a failed placement (`409 Conflict` -> `Conflict`)."""
    code = reason.split()[0] if reason.split() else ""
    if not code.isdigit():
        return "Unknown"
    if int(code) == 0:
        return "Unreachable"
    try:
        return http.HTTPStatus(int(code)).phrase.replace(" ", "").replace("-", "")
    except ValueError:
        return code


ARRIVAL_GRACE_SECONDS = 15.0


def creation_time(body: Body) -> float | None:
    stamp = body.get("metadata", {}).get("creationTimestamp")
    if not stamp:
        return None
    try:
        return datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class Scheduler:
    def __init__(
        self,
        cache: ClusterCache,
        api: Api,
        config: OperatorConfig,
        core_config: SchedulerConfig | None = None,
        clock: Callable[[], float] = time.time,
        metrics: Metrics | None = None,
        health: Health | None = None,
    ) -> None:
        self.cache = cache
        self.api = api
        self.config = config
        self.core_config = core_config or SchedulerConfig()
        self.clock = clock
        self.assumed = AssumedPods(config.assume_seconds)
        self.writer = Writer(api, self.assumed, config.bind_concurrency, clock)
        # Status and Event writes get a quarter of the bindings' share of the API server.
        self.background = BackgroundWrites(max(4, config.bind_concurrency // 4))
        self.events = EventRecorder(api)
        self.backoff: dict[str, Backoff] = {}
        self.partial_since: dict[str, float] = {}
        self.written: dict[str, dict[str, Any]] = {}  # object key -> last status we wrote
        self.counters = Counters()
        self.metrics = metrics or Metrics()
        self.health = health or Health()
        self.running: set[str] = set()  # groups seen Running (time to running observed once)
        self._timings: dict[str, float] = {}
        self.memo = ParseMemo()
        self.plans: dict[str, Plan] = {}  # group -> plan of its gang while it is written
        self._recording: dict[str, asyncio.Future[bool]] = {}  # this cycle's new plans

    async def cycle(self) -> CycleResult:
        """Decide and start the writes; they continue after the cycle returns."""
        with cycle_context(self.counters.cycles + 1):
            return await self._cycle()

    async def settle(self, timeout: float | None = None) -> bool:
        """Wait for the writes started so far; True if they all ended in time."""
        return await self.background.settle(timeout)

    async def close(self, timeout: float) -> None:
        """Let writes in flight finish for up to `timeout` seconds, then cancel the rest
        (a gang cut short is finished from its plan by the next leader)."""
        if not await self.settle(timeout):
            log.warning("writes cancelled at shutdown", left=len(self.background))
        await self.background.cancel()

    async def _cycle(self) -> CycleResult:
        now = self.clock()
        pods = {pod_key(p): p for p in self.cache.objects(Kind.POD)}
        self.assumed.expire(pods, now)
        await self._recover_plans(pods, now)
        hidden = {key for key, b in self.backoff.items() if b.until > now}
        self.memo.rotate()
        snapshot = take_snapshot(
            self.cache, self.assumed, self.config.mode, hidden, self.config.namespaces, self.memo
        )
        result = run_cycle(snapshot, self.core_config, now)
        self._timings = {"decide": self.clock() - now}
        placing = self._place(result, pods, now)
        pods = {pod_key(p): p for p in self.assumed.overlay(pods.values())}
        groups = {object_key(g): g for g in self.cache.objects(Kind.POD_GROUP)}
        members = _members(pods.values())
        await self._release_partial(result, groups, members, now)
        phases = self._group_statuses(result, groups, members, hidden, now)
        for recorded in self._recording.values():  # a group gone since the snapshot
            if not recorded.done():
                recorded.set_result(False)
        self._recording.clear()
        self._missing_groups(result, members, now)
        snapshot = with_bindings(snapshot, result.bindings)  # capacity after this cycle
        usage = gpu_usage(snapshot)
        self.metrics.set_gpu_usage(usage.allocated, usage.free, usage.free_unusable_whole_node)
        self.metrics.set_group_phases(collections.Counter((p, q) for q, p in phases))
        self._queue_statuses(snapshot, phases)
        self._topology_statuses(snapshot)
        self._forget_deleted(groups)
        self.counters.cycles += 1
        self._log(result, placing, now)
        self.metrics.observe_cycle(self.clock() - now)
        self.health.beat()
        return result

    def _count(self, outcome: GangOutcome) -> None:
        self.counters.bound += len(outcome.placed)
        self.counters.failed += len(outcome.failed)
        for _ in outcome.placed:
            self.metrics.record_binding(True)
        for reason in outcome.failed.values():
            self.metrics.record_binding(False, failure_label(reason))

    # -- placing ---------------------------------------------------------------------------

    async def _recover_plans(self, pods: Mapping[str, Body], now: float) -> None:
        """Plans this process did not write (a previous leader's); almost every cycle has
        none, so the node names are only gathered when one is found."""
        leftovers = [(g, p) for g in list(self.cache.objects(Kind.POD_GROUP))
                     if (p := decode_plan(g)) is not None and p.id not in self.writer.plan_ids]
        if not leftovers:
            return
        nodes = {object_key(n) for n in self.cache.objects(Kind.NODE)}
        for group, plan in leftovers:
            self.writer.plan_ids.add(plan.id)
            with group_context(object_key(group), queue_of(group)):
                await self._recover_plan(group, plan, pods, nodes, now)

    async def _recover_plan(
        self, group: Body, plan: Plan, pods: Mapping[str, Body], nodes: set[str], now: float
    ) -> None:
        decision = resolve(plan, pods, nodes)
        if decision.outcome is Outcome.FINISH:
            key = object_key(group)
            self.plans[key] = plan  # the status keeps it until the pods are bound
            try:
                outcome = await self.writer.place_gang(key, decision.remaining, pods, plan)
            finally:
                self.plans.pop(key, None)
            self._count(outcome)
            log.info("plan finished", placed=len(outcome.placed), failed=len(outcome.failed))
        else:  # the next status write removes it
            log.info("plan dropped", outcome=decision.outcome.value)

    def _place(
        self, result: CycleResult, pods: Mapping[str, Body], now: float
    ) -> dict[str, int]:
        """Assume every decided gang on its nodes now and write it in the background;
        returns pods per gang started."""
        gangs: dict[str, dict[str, str]] = {}
        for binding in result.bindings:
            gangs.setdefault(binding.group, {})[binding.pod] = binding.node
        for key, assignments in gangs.items():
            plan, recorded = None, None
            if self._group_body(key, result.decision(key)) is not None:
                plan = Plan(uuid.uuid4().hex[:12], dict(assignments))
                self.plans[key] = plan
                recorded = asyncio.get_running_loop().create_future()
                self._recording[key] = recorded  # the group's status write records it
            writes = self.writer.place_gang(key, assignments, pods, plan, recorded)
            self.background.spawn(self._placed(key, plan, writes, now), name=f"gang {key}")
        return {key: len(assignments) for key, assignments in gangs.items()}

    async def _placed(
        self, key: str, plan: Plan | None, writes: Awaitable[GangOutcome], now: float
    ) -> None:
        try:
            outcome = await writes
        finally:
            if plan is not None and self.plans.get(key) is plan:
                del self.plans[key]  # the next status write removes it from the PodGroup
        self._count(outcome)
        group = self.cache.get(Kind.POD_GROUP, outcome.group)
        if group is not None:
            with group_context(outcome.group, queue_of(group)):
                await self._report_gang(group, outcome, now)

    async def _report_gang(self, group: Body, outcome: GangOutcome, now: float) -> None:
        """One log line per gang written (never one per pod), and an event on failures."""
        if outcome.skipped:
            log.warning("gang not placed", reason=outcome.skipped)
            return
        if not outcome.failed:
            log.info("gang placed", pods=len(outcome.placed))
            return
        first = next(iter(outcome.failed.items()))
        log.warning("gang partly placed", placed=len(outcome.placed), failed=len(outcome.failed),
                    example=f"{first[0]}: {first[1]}")
        await self.events.post(Event(
            group, "Warning", "BindingFailed",
            f"{len(outcome.failed)} of {len(outcome.failed) + len(outcome.placed)} pods "
            f"not placed (e.g. {first[0]}: {first[1]}); placed pods stay, the rest is "
            "retried", topic="binding"), now)

    def _group_body(self, key: str, decision: GroupDecision | None) -> Body | None:
        if decision is not None and decision.implicit:
            return None
        return self.cache.get(Kind.POD_GROUP, key)

    async def _release_partial(
        self,
        result: CycleResult,
        groups: Mapping[str, Body],
        members: Mapping[str, Sequence[Body]],
        now: float,
    ) -> None:
        """A gang left short of minMember (a placement write failed) past its deadline:
        its placed pods are deleted when a controller will recreate them."""
        for key, group in groups.items():
            pods = members.get(key, [])
            placed = [p for p in pods if is_bound(p) and not is_terminal(p)]
            min_member = int(group.get("spec", {}).get("minMember") or 1)
            phase = (group.get("status") or {}).get("phase", "Pending")
            partial = 0 < len(placed) < min_member and phase in ("Pending", "Inqueue") and not any(
                is_terminal(p) for p in pods)
            if not partial:
                self.partial_since.pop(key, None)
                continue
            since = self.partial_since.setdefault(key, now)
            timeout = int(group.get("spec", {}).get("scheduleTimeoutSeconds") or 0)
            if now - since < max(timeout, self.config.partial_grace_seconds):
                continue
            if all(has_controller(p) for p in placed):
                for pod in placed:
                    await self.writer.delete_pod(pod_key(pod))
                self.counters.released += 1
                self.partial_since.pop(key, None)
                await self.events.post(Event(
                    group, "Warning", "PartialGangReleased",
                    f"{len(placed)} of {min_member} pods were placed and the rest could not be; "
                    "deleted the placed pods so their controller recreates them", topic="partial"),
                    now)
            else:
                await self.events.post(Event(
                    group, "Warning", "PartialGang",
                    f"{len(placed)} of {min_member} pods are placed and the rest cannot be; the "
                    "placed pods have no controller and are left running", topic="partial"), now)

    # -- status ----------------------------------------------------------------------------

    def _group_statuses(
        self,
        result: CycleResult,
        groups: Mapping[str, Body],
        members: Mapping[str, Sequence[Body]],
        hidden: set[str],
        now: float,
    ) -> list[tuple[str, str]]:
        phases: list[tuple[str, str]] = []
        for key, group in groups.items():
            queue = queue_of(group)
            if key in hidden:
                phases.append((queue, (group.get("status") or {}).get("phase", "Pending")))
                continue
            with group_context(key, queue):
                decision = result.decision(key)
                timed_out = self._timed_out(key, group, decision, now)
                desired = podgroup_status(group, members.get(key, []), decision, now, timed_out)
                phases.append((queue, desired["phase"]))
                self._observe_running(key, group, desired["phase"], now)
                self._group_writes(key, queue, group, desired, decision, timed_out, now)
        return phases

    def _group_writes(
        self,
        key: str,
        queue: str,
        group: Body,
        desired: dict[str, Any],
        decision: GroupDecision | None,
        timed_out: bool,
        now: float,
    ) -> None:
        """The group's Events and status, written in the background, Events first. A gang
        placed this cycle has its plan in that status write, and is bound once it landed."""
        self._with_plan(key, group, desired)
        recording = self._recording.pop(key, None)
        if recording is None:
            if self._still_arriving(group, decision, now):
                return
            if not self._status_changes(f"podgroups/{key}", group, desired) and not timed_out:
                return

        async def write() -> None:
            with group_context(key, queue):
                await self._events_for(group, desired, decision, timed_out, now)
                ok = await self._patch_status(f"podgroups/{key}", group, "podgroups", desired)
            if recording is not None and not recording.done():
                recording.set_result(ok)

        self.written[f"podgroups/{key}"] = desired
        self.background.offer(f"podgroups/{key}", write, keep=recording is not None)

    def _with_plan(self, key: str, group: Body, desired: dict[str, Any]) -> None:
        """The plan of a gang being written stays in the status; any other is removed."""
        shown = (group.get("status") or {}).get("plan")
        plan = self.plans.get(key)
        if plan is not None:
            old = shown if isinstance(shown, Mapping) and shown.get("id") != plan.id else None
            desired["plan"] = plan.status(replacing=old)
        elif shown:
            desired["plan"] = None

    def _still_arriving(self, group: Body, decision: GroupDecision | None, now: float) -> bool:
        """A gang whose pods are still being created is not news: no status and no
        Warning until ARRIVAL_GRACE_SECONDS after the group was created (a 500-gang
        submission otherwise costs 1,000 writes per cycle, most of them overwritten a
        second later when the gang is placed, and users see alarms for jobs that are
        merely starting)."""
        if decision is None or decision.reason != Reason.GANG_INCOMPLETE:
            return False
        created = creation_time(group)
        return created is not None and now - created < ARRIVAL_GRACE_SECONDS

    def _observe_running(self, key: str, group: Body, phase: str, now: float) -> None:
        """Time to running, once per group, when this operator sees it become Running."""
        was_running = (group.get("status") or {}).get("phase") == "Running"
        if phase != "Running" or key in self.running:
            return
        self.running.add(key)
        created = creation_time(group)
        if was_running or created is None:
            return  # Running before this operator looked (e.g. after a leader change)
        min_member = int(group.get("spec", {}).get("minMember") or 1)
        self.metrics.observe_gang_running(min_member, max(now - created, 0.0))
        log.info("gang running", min_member=min_member, seconds=round(now - created, 3))

    def _timed_out(
        self, key: str, group: Body, decision: GroupDecision | None, now: float
    ) -> bool:
        timeout = group.get("spec", {}).get("scheduleTimeoutSeconds")
        if decision is None or decision.scheduled or timeout is None:
            self.backoff.pop(key, None)
            return False
        created = creation_time(group)
        created = now if created is None else created
        if now - created < float(timeout):
            return False
        previous = self.backoff.get(key)
        delay = self.config.backoff_initial_seconds if previous is None else min(
            previous.delay * 2, self.config.backoff_max_seconds)
        self.backoff[key] = Backoff(delay, now + delay)
        return True

    async def _events_for(
        self,
        group: Body,
        desired: Mapping[str, Any],
        decision: GroupDecision | None,
        timed_out: bool,
        now: float,
    ) -> None:
        conditions = {c["type"]: c for c in desired["conditions"]}
        before = {c.get("type"): c for c in (group.get("status") or {}).get("conditions") or []}

        def shown(kind: str) -> bool:
            """The object already says this (a new leader has no memory of its Events)."""
            said = before.get(kind) or {}
            return all(said.get(k) == conditions[kind][k] for k in ("status", "reason", "message"))

        admitted = conditions["Admitted"]["status"] == "True" and not shown("Admitted")
        scheduled = conditions["Scheduled"]["status"] == "True" and not shown("Scheduled")
        if admitted and not scheduled:
            await self.events.post(Event(group, "Normal", "Admitted",
                                         conditions["Admitted"]["message"]), now)
        if scheduled:  # admitted and placed in one cycle: one Event says both
            message = conditions["Scheduled"]["message"]
            if admitted:
                message = f"{conditions['Admitted']['message']}; {message}"
            await self.events.post(Event(group, "Normal", "Scheduled", message,
                                         topic="scheduling"), now)
        elif (conditions["Scheduled"]["status"] != "True" and not timed_out
              and conditions["Unschedulable"]["status"] == "True" and not shown("Unschedulable")):
            unschedulable = conditions["Unschedulable"]
            message = unschedulable["message"]
            if unschedulable["reason"] == Reason.GANG_INCOMPLETE:  # counts move while pods arrive
                message = "fewer pods exist than minMember; waiting for the rest"
            await self.events.post(Event(group, "Warning", unschedulable["reason"], message,
                                         topic="scheduling"), now)
        if timed_out:
            # One Event per timeout, not one per backoff step: the message has no delay in it.
            await self.events.post(Event(
                group, "Warning", Reason.TIMEOUT,
                f"not placed within {group['spec'].get('scheduleTimeoutSeconds')}s; still queued, "
                f"retried with backoff ({self.config.backoff_initial_seconds:g}s doubling to "
                f"{self.config.backoff_max_seconds:g}s)", topic="timeout"), now)

    def _missing_groups(
        self, result: CycleResult, members: Mapping[str, Sequence[Body]], now: float
    ) -> None:
        for decision in result.groups:
            if decision.reason != Reason.GROUP_NOT_FOUND:
                continue
            for pod in members.get(decision.group, []):
                if not is_bound(pod):
                    self._post_later(
                        Event(pod, "Warning", Reason.GROUP_NOT_FOUND, decision.message), now)

    def _post_later(self, event: Event, now: float) -> None:
        async def post() -> None:
            await self.events.post(event, now)

        self.background.spawn(self.background.bounded(post), name="event")

    def _queue_statuses(self, snapshot: Snapshot, phases: list[tuple[str, str]]) -> None:
        allocated = allocated_by_queue(snapshot)
        for queue in list(self.cache.objects(Kind.QUEUE)):
            name = object_key(queue)
            desired = queue_status(name, phases, allocated.get(name, {}))
            self._write_status(name, queue, "queues", desired)

    def _topology_statuses(self, snapshot: Snapshot) -> None:
        for topology in list(self.cache.objects(Kind.NETWORK_TOPOLOGY)):
            name = object_key(topology)
            desired = topology_status(snapshot, name)
            if desired is not None:
                self._write_status(name, topology, "networktopologies", desired)

    def _status_changes(self, written_key: str, body: Body, desired: dict[str, Any]) -> bool:
        """Neither the object nor a write already started says `desired`."""
        return differs(desired, body.get("status")) and self.written.get(written_key) != desired

    def _write_status(
        self, key: str, body: Body, plural: str, desired: dict[str, Any]
    ) -> None:
        written_key = f"{plural}/{key}"
        if not self._status_changes(written_key, body, desired):
            return
        self.written[written_key] = desired
        async def write() -> None:
            await self._patch_status(written_key, body, plural, desired)

        self.background.offer(written_key, write)

    async def _patch_status(
        self, written_key: str, body: Body, plural: str, desired: dict[str, Any]
    ) -> bool:
        meta = body.get("metadata", {})
        path = group_path(plural, meta.get("name", ""), meta.get("namespace", ""), "status")
        reply = await self.api.request("PATCH", path, {"status": desired}, MERGE_PATCH)
        self.counters.status_writes += 1
        if not reply.ok:
            if self.written.get(written_key) is desired:
                del self.written[written_key]  # the next cycle tries again
            log.warning("status not written", object=written_key, status=reply.status,
                        reason=reply.reason)
        return reply.ok

    def _forget_deleted(self, groups: Mapping[str, Body]) -> None:
        live = {f"podgroups/{key}" for key in groups}
        for key in [k for k in self.written if k.startswith("podgroups/") and k not in live]:
            del self.written[key]
        for key in [k for k in self.backoff if k not in groups]:
            del self.backoff[key]
        self.running &= set(groups)

    def _log(self, result: CycleResult, placing: Mapping[str, int], now: float) -> None:
        waiting = sum(1 for d in result.groups if not d.scheduled)
        if placing or self.counters.cycles % 60 == 1:
            log.info("cycle", cycle=self.counters.cycles, groups=len(result.groups),
                     waiting=waiting, gangs_started=len(placing),
                     pods_started=sum(placing.values()), assumed=len(self.assumed),
                     writes_in_flight=len(self.background), invalid=len(result.invalid),
                     seconds=round(self.clock() - now, 3),
                     **{f"{k}_seconds": round(v, 3) for k, v in self._timings.items()})


def _members(pods: Any) -> dict[str, list[Body]]:
    members: dict[str, list[Body]] = {}
    for pod in pods:
        key = group_key_of(pod)
        if key is not None:
            members.setdefault(key, []).append(pod)
    return members
