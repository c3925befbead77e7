"""After each cycle, what the objects say: PodGroup, Queue and NetworkTopology status and
the Events that go with them, composed (compose.py) from the cycle's decisions and
handed to the writer.

Only news is written: a status is offered when it differs from what the object and the
last offered write say, so an idle cluster causes no writes.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import structlog

from phalanx.core.model.config import SchedulerConfig
from phalanx.core.model.eviction import EvictionReason
from phalanx.core.model.result import CycleResult, GroupDecision
from phalanx.core.model.status import Reason
from phalanx.observe.logging import group_context
from phalanx.observe.metrics import Metrics
from phalanx.operator.cache import Body, object_key
from phalanx.operator.capacity import TopologyFigures
from phalanx.operator.compose import (
    FAILING,
    Timing,
    degraded_condition,
    failed_scheduling_event,
    group_events,
    pod_scheduled_condition,
    podgroup_status,
    queue_status,
    topology_events,
    waiting_message,
)
from phalanx.operator.events import Event
from phalanx.operator.kube.client import UPSTREAM_PODGROUPS
from phalanx.operator.pods import is_gated, pod_key
from phalanx.operator.upstream_status import upstream_report
from phalanx.operator.writes import Writes

log = structlog.get_logger("phalanx.operator")

ARRIVAL_GRACE_SECONDS = 15.0
POD_REFRESH_SECONDS = 30.0  # a waiting pod's numbers are rewritten at most this often


def creation_time(body: Body) -> float | None:
    stamp = body.get("metadata", {}).get("creationTimestamp")
    if not stamp:
        return None
    try:
        return datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def still_arriving(group: Body, decision: GroupDecision, now: float) -> bool:
    """A gang whose pods are still being created is not news: no status and no Warning
    until ARRIVAL_GRACE_SECONDS after the group was created (a 500-gang submission
    otherwise costs 1,000 writes per cycle, most of them overwritten a second later when
    the gang is placed, and users see alarms for jobs that are merely starting)."""
    if decision.reason != Reason.GANG_INCOMPLETE:
        return False
    created = creation_time(group)
    return created is not None and now - created < ARRIVAL_GRACE_SECONDS


def composite_children(upstream: Mapping[str, Body]) -> dict[str, list[Body]]:
    """Kubernetes' PodGroups by the CompositePodGroup (key) they are children of: the core
    decides for the composite, and each child says the same, as kube-scheduler's do."""
    children: dict[str, list[Body]] = {}
    for body in upstream.values():
        parent = (body.get("spec") or {}).get("parentCompositePodGroupName")
        if body.get("kind") == "PodGroup" and isinstance(parent, str):
            namespace = (body.get("metadata") or {}).get("namespace", "")
            children.setdefault(f"{namespace}/{parent}", []).append(body)
    return children


class Reports:
    def __init__(self, writes: Writes, config: SchedulerConfig, metrics: Metrics) -> None:
        self._writes = writes
        self._config = config
        self._metrics = metrics
        self._running: set[str] = set()  # groups seen Running (time to running observed once)
        self._pods_said: dict[str, tuple[str, float]] = {}  # waiting pod -> (message, when)

    def groups(
        self,
        result: CycleResult,
        groups: Mapping[str, Body],
        now: float,
        upstream: Mapping[str, Body] | None = None,
        estimated: bool = False,
    ) -> list[tuple[str, str]]:
        """Write each PodGroup's status and Events; returns (queue, phase) per group.
        Kubernetes' own PodGroups (`upstream`) get their condition as kube-scheduler
        writes it, and RuntimeLimitExceeded / ExpectedStart conditions; a Phalanx
        PodGroup of the same name is the one the group was read from.
        `estimated`: the cycle estimated starts (`result.expected_starts`), which replace
        the groups' `status.expectedStart`; other cycles leave it as it is."""
        phases: list[tuple[str, str]] = []
        children = composite_children(upstream or {})
        expected = {e.group: e for e in result.expected_starts}
        over_limit = {e.group: e.message for e in result.evictions
                      if e.reason is EvictionReason.RUNTIME_LIMIT and e.group is not None}
        for decision in result.groups:
            group = groups.get(decision.group)
            timing = Timing(estimated, expected.get(decision.group),
                            over_limit.get(decision.group))
            if group is None and upstream and not decision.implicit:
                self._offer_upstream(upstream.get(decision.group), decision, now, timing)
                for child in children.get(decision.group, ()):
                    self._offer_upstream(child, decision, now, timing)
            if group is None or decision.implicit:
                continue
            if decision.held:  # not tried this cycle: nothing changed
                phases.append((decision.queue, (group.get("status") or {}).get("phase", "Pending")))
                continue
            with group_context(decision.group, decision.queue):
                desired = podgroup_status(
                    self._writes.as_offered("podgroups", group), decision, now, timing)
                phases.append((decision.queue, desired["phase"]))
                self._observe_running(group, decision, desired["phase"], now)
                self._offer(group, decision, desired, now)
        return phases

    def _offer(
        self, group: Body, decision: GroupDecision, desired: dict[str, object], now: float
    ) -> None:
        """The group's Events and status, Events first."""
        if still_arriving(group, decision, now):
            return
        if not decision.timed_out and not self._writes.status_changes(
                "podgroups", group, desired):
            return
        events = group_events(group, desired, decision, self._config)
        self._writes.status("podgroups", group, desired, events)

    def _offer_upstream(
        self, group: Body | None, decision: GroupDecision, now: float, timing: Timing
    ) -> None:
        """Kubernetes' own PodGroup: its scheduling condition as kube-scheduler writes it,
        and what a Phalanx PodGroup says about time, as conditions (upstream_status.py)."""
        if group is None or decision.held or still_arriving(group, decision, now):
            return
        group = self._writes.as_offered(UPSTREAM_PODGROUPS, group)
        report = upstream_report(group, decision, now, timing)
        if report.status is not None and self._writes.status_changes(
                UPSTREAM_PODGROUPS, group, report.status):
            self._writes.status(UPSTREAM_PODGROUPS, group, report.status, report.events)

    def _observe_running(
        self, group: Body, decision: GroupDecision, phase: str, now: float
    ) -> None:
        """Time to running, once per group, when this operator sees it become Running."""
        if phase != "Running" or decision.group in self._running:
            return
        self._running.add(decision.group)
        created = creation_time(group)
        if (group.get("status") or {}).get("phase") == "Running" or created is None:
            return  # Running before this operator looked (e.g. after a leader change)
        self._metrics.observe_gang_running(decision.min_member, max(now - created, 0.0))
        log.info("gang running", min_member=decision.min_member,
                 seconds=round(now - created, 3))

    def waiting_pods(
        self,
        result: CycleResult,
        groups: Mapping[str, Body],
        waiting: Callable[[str], Sequence[Body]],
        now: float,
    ) -> None:
        """Every pod that waits says why, as kube-scheduler has it say: condition
        `PodScheduled=False` with the group's reason and message, and a `FailedScheduling`
        Warning once per reason (not again while only the numbers change: those are kept
        current in the condition, refreshed at most every POD_REFRESH_SECONDS per pod).
        Pods of a gang still arriving, gated pods (the API server says SchedulingGated)
        and pods placed this cycle are left alone."""
        placed = {binding.pod for binding in result.bindings}
        said: dict[str, tuple[str, float]] = {}
        for decision in result.groups:
            if decision.scheduled or decision.code not in FAILING or decision.held:
                continue
            group = groups.get(decision.group)
            missing = decision.reason == Reason.GROUP_NOT_FOUND
            if not decision.implicit and not missing and (
                    group is None or still_arriving(group, decision, now)):
                continue
            name = None if decision.implicit else decision.group.split("/", 1)[-1]
            prefix, message = waiting_message(decision, name)
            for pod in waiting(decision.group):
                key = pod_key(pod)
                if key in placed or is_gated(pod):
                    continue
                said[key] = self._tell_pod(pod, decision, prefix, message, not missing, now)
        self._pods_said = said

    def _tell_pod(
        self, pod: Body, decision: GroupDecision, prefix: str, message: str, warn: bool,
        now: float,
    ) -> tuple[str, float]:
        """Write the pod's condition if it says something else; what was last offered."""
        key = pod_key(pod)
        conditions: list[Mapping[str, Any]] = (pod.get("status") or {}).get("conditions") or []
        shown = next((c for c in conditions if c.get("type") == "PodScheduled"), {})
        shown_message = str(shown.get("message") or "") if shown.get("status") == "False" else ""
        offered = self._pods_said.get(key)
        if message in (shown_message, offered[0] if offered else None):
            return offered or (message, now)
        same_reason = shown_message.startswith(prefix) or (
            offered is not None and offered[0].startswith(prefix))
        if same_reason and offered is not None and now - offered[1] < POD_REFRESH_SECONDS:
            return offered  # only numbers changed, and recently: the next refresh has them
        events = [failed_scheduling_event(pod, message)] if warn and not same_reason else []
        self._writes.pod_condition(pod, pod_scheduled_condition(pod, decision, message, now),
                                   events)
        return (message, now)

    def missing_groups(
        self, result: CycleResult, waiting: Callable[[str], Sequence[Body]]
    ) -> None:
        """A Warning on each waiting pod that names a group which does not exist."""
        for decision in result.groups:
            if decision.reason == Reason.GROUP_NOT_FOUND:
                for pod in waiting(decision.group):
                    self._writes.event(
                        Event(pod, "Warning", Reason.GROUP_NOT_FOUND, decision.message))

    def queues(
        self, allocated: Mapping[str, Mapping[str, str]], phases: Sequence[tuple[str, str]],
        queues: Iterable[Body], usage: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        """Each Queue's status: its groups' phases and what its placed pods hold
        (`allocated`, by queue), and its decayed usage when due a write (`usage`)."""
        for queue in list(queues):
            name = object_key(queue)
            desired = {**queue_status(name, phases, allocated.get(name, {})),
                       **(usage or {}).get(name, {})}
            if self._writes.status_changes("queues", queue, desired):
                self._writes.status("queues", queue, desired)

    def topologies(
        self, figures: Mapping[str, TopologyFigures], topologies: Iterable[Body], now: float
    ) -> None:
        """Each NetworkTopology's domain tree, and `Degraded` (with a Warning) while some
        nodes carry no label of one of its levels."""
        for topology in list(topologies):
            key = object_key(topology)
            figure = figures.get(key)
            if figure is None:
                continue
            desired = {**figure.status,
                       "conditions": [degraded_condition(topology, figure.gaps, now)]}
            if self._writes.status_changes("networktopologies", topology, desired):
                events = topology_events(topology, desired, figure.gaps)
                if events:
                    log.warning("network topology degraded", topology=key,
                                levels=[gap.level for gap in figure.gaps])
                self._writes.status("networktopologies", topology, desired, events)

    def forget(self, groups: Mapping[str, Body], upstream: Mapping[str, Body]) -> None:
        """Groups deleted: their last offered status and running mark go."""
        self._writes.forget("podgroups", groups)
        self._writes.forget(UPSTREAM_PODGROUPS, upstream)
        self._running &= set(groups)
