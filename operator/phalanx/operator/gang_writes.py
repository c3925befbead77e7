"""Carrying out the core's bindings: each gang's plan (on its first binding, plans.py),
its bindings as one burst in the background, and what came of them (metrics, a log line
per gang, an Event when some failed or its PodGroup went away meanwhile). A previous
leader's leftover plans are finished before anything else is planned."""

from __future__ import annotations

import http
from collections.abc import Mapping

import structlog

from phalanx.core.model.dra import DraInventory
from phalanx.core.model.names import DEFAULT_QUEUE
from phalanx.core.model.quantity import whole_number
from phalanx.core.model.result import Binding, CycleResult
from phalanx.core.parse.gpu_share import gpu_index_value
from phalanx.observe.logging import group_context
from phalanx.observe.metrics import Metrics
from phalanx.operator.binder import GangWritten
from phalanx.operator.cache import Body, ByKey, ClusterCache, Kind, object_key
from phalanx.operator.claim_recovery import claims_ready
from phalanx.operator.claim_writes import GangClaims, gang_claims
from phalanx.operator.compose import binding_failed_event, group_deleted_event
from phalanx.operator.plans import LeftoverAction, Plan, PlanBook, resolve
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


class GangWrites:
    """The bindings of the cycles, as `Scheduler` hands them over."""

    def __init__(self, cache: ClusterCache, writes: Writes, plans: PlanBook,
                 metrics: Metrics, workload_gangs: WorkloadGangs) -> None:
        self._cache = cache
        self._writes = writes
        self._plans = plans
        self._metrics = metrics
        self._workload_gangs = workload_gangs

    async def recover_plans(self, pods: Mapping[str, Body], now: float) -> None:
        """Plans this process did not write (a previous leader's), on the pods bound
        with them; almost every cycle has none, so the node names are only gathered when
        one is found."""
        leftovers = self._plans.leftovers(pods.values(), now)
        if not leftovers:
            return
        nodes = {object_key(n) for n in self._cache.objects(Kind.NODE)}
        for plan in leftovers:
            group = self._cache.get(Kind.POD_GROUP, plan.group) or {}
            queue = str(group.get("spec", {}).get("queue") or DEFAULT_QUEUE)
            with group_context(plan.group, queue):
                await self._recover_plan(plan, pods, nodes)

    async def _recover_plan(self, plan: Plan, pods: Mapping[str, Body], nodes: set[str]) -> None:
        resolution = resolve(plan, pods, nodes)
        if resolution.action is not LeftoverAction.FINISH:
            log.info("plan dropped", action=resolution.action.value)
            return
        claims = ByKey(self._cache.view().get(Kind.RESOURCE_CLAIM, {}))
        remaining = {pod: node for pod, node in resolution.remaining.items()
                     if pod in pods and claims_ready(pods[pod], claims)}
        if not remaining:  # its pods' claims were never written: the cycles place them
            log.info("plan dropped", action="claims not allocated")
            return
        outcome = await self._writes.bind_now(plan.group, remaining, pods, plan.devices)
        self._count(outcome)
        log.info("plan finished", placed=len(outcome.placed), failed=len(outcome.failed))

    def place(self, result: CycleResult, pods: Mapping[str, Body], now: float,
              dra: DraInventory | None = None) -> dict[str, int]:
        """Assume every decided gang on its nodes now and write it in the background, its
        plan on its first binding; returns pods per gang started. `dra`:
        the snapshot's DRA objects, for the gangs whose pods have claims to write; a gang
        with a claim kube-controller-manager has not made yet waits for the next cycle."""
        gangs: dict[str, dict[str, str]] = {}
        devices: dict[str, dict[str, str]] = {}
        bindings: dict[str, list[Binding]] = {}
        for binding in result.bindings:
            gangs.setdefault(binding.group, {})[binding.pod] = binding.node
            bindings.setdefault(binding.group, []).append(binding)
            if binding.devices:
                devices.setdefault(binding.group, {})[binding.pod] = gpu_index_value(
                    [share.index for share in binding.devices])
        claims: dict[str, GangClaims] = {}
        if dra is not None and not dra.empty:
            for key in list(gangs):
                gang = gang_claims(bindings[key], dra, pods)
                if gang.waiting:
                    log.info("gang waits for its claims", group=key, reason=gang.waiting)
                    del gangs[key]
                elif gang.writes:
                    claims[key] = gang
        for key, assignments in gangs.items():
            decision = result.decision(key)
            chosen = devices.get(key, {})
            grouped = decision is not None and not decision.implicit
            # a gang of one pod cannot be left partly bound: no plan to carry
            plan = (self._plans.start(key, assignments, chosen, pods, now).annotation()
                    if grouped and len(assignments) > 1 else "")

            async def written(outcome: GangWritten, gang: Mapping[str, str] = assignments,
                              grouped: bool = grouped) -> None:
                self._count(outcome)
                self._report_gang(outcome, gang if grouped else None, pods)

            self._writes.bind_gang(key, assignments, pods, plan, written, chosen,
                                   claims.get(key))
        return {key: len(assignments) for key, assignments in gangs.items()}

    def _count(self, outcome: GangWritten) -> None:
        self._writes.count(outcome)
        for _ in outcome.placed:
            self._metrics.record_binding(True)
        for reason in outcome.failed.values():
            self._metrics.record_binding(False, failure_label(reason))

    def _report_gang(
        self, outcome: GangWritten, gang: Mapping[str, str] | None, pods: Mapping[str, Body]
    ) -> None:
        """One log line per gang written (never one per pod), and an Event on failures.
        `gang`: the pods planned (None for a lone pod, which has no PodGroup)."""
        group = self._cache.get(Kind.POD_GROUP, outcome.group) or self._cache.get(
            Kind.UPSTREAM_POD_GROUP, outcome.group)
        if group is None:
            if outcome.group in self._workload_gangs.pending:
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
                self._writes.event(binding_failed_event(group, outcome.placed, outcome.failed))

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
            self._writes.event(group_deleted_event(body, name, len(bound), len(gang), node))
