"""What Kubernetes' own PodGroup (scheduling.k8s.io) should say after a cycle.

kube-scheduler reports a gang on one condition (pkg/scheduler/schedule_one_podgroup.go):
`PodGroupInitiallyScheduled` in v1beta1 and v1alpha3 (Kubernetes 1.37), `PodGroupScheduled`
in v1alpha2 (1.36); the object's own apiVersion says which. True with reason `Scheduled` once
the gang is placed; False with reason `Unschedulable` (it does not fit) or `SchedulerError`
(it cannot be read); never set back from True to False by a later cycle; nothing while
fewer than minCount pods exist. Phalanx writes the same, so whatever reads that
condition sees Phalanx's gangs as it sees kube-scheduler's; the Events carry Phalanx's
own reason (NoDomainFits, QueueCapability, ...). One exception to "never back to False":
a gang left partly placed past its deadline whose placed pods Phalanx deleted
(`phalanx.core.admission.partial`) is no longer scheduled, and says so (`released_status`);
kube-scheduler has no such release (its gang waits at Permit, bound nothing, and times
out), so its `Unschedulable` reason is the one that fits. Pure: no clock reads, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from phalanx.core.model.result import GroupDecision
from phalanx.core.model.status import Reason, StatusCode
from phalanx.operator.cache import Body
from phalanx.operator.events import MAX_MESSAGE, Event, timestamp

SCHEDULED = "PodGroupInitiallyScheduled"  # v1beta1, v1alpha3
SCHEDULED_V1ALPHA2 = "PodGroupScheduled"
SCHEDULED_COMPOSITE = "CompositePodGroupInitiallyScheduled"  # a composite's own, v1alpha3
UNSCHEDULABLE = "Unschedulable"
SCHEDULER_ERROR = "SchedulerError"


@dataclass(frozen=True, slots=True)
class UpstreamReport:
    """`status`: the whole status to write (other conditions kept), None for no write."""

    status: dict[str, Any] | None
    events: tuple[Event, ...] = ()


def upstream_report(group: Body, decision: GroupDecision, now: float) -> UpstreamReport:
    wanted = _condition(group, decision)
    if wanted is None:
        return UpstreamReport(None)
    before = _scheduled_condition(group)
    if before is not None and before.get("status") == "True" and wanted["status"] != "True":
        return UpstreamReport(None)
    status = _with_condition(group, wanted, now)
    return UpstreamReport(status, (_event(group, decision),) if status is not None else ())


def released_status(group: Body, message: str, now: float) -> dict[str, Any] | None:
    """The status of a gang whose partly placed pods were deleted: not scheduled (also
    after True), `message` saying what was released; None if it says so already."""
    return _with_condition(group, _made(group, "False", UNSCHEDULABLE, message), now)


def condition_type(group: Body) -> str:
    """The scheduling condition's type in the PodGroup's own kind and API version."""
    if group.get("kind") == "CompositePodGroup":
        return SCHEDULED_COMPOSITE
    version = str(group.get("apiVersion") or "")
    return SCHEDULED_V1ALPHA2 if version.endswith("/v1alpha2") else SCHEDULED


def _scheduled_condition(group: Body) -> Mapping[str, Any] | None:
    wanted = condition_type(group)
    return next((c for c in _conditions(group) if c.get("type") == wanted), None)


def _conditions(group: Body) -> list[Mapping[str, Any]]:
    status: Mapping[str, Any] = group.get("status") or {}
    return [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]


def _with_condition(group: Body, wanted: dict[str, Any], now: float) -> dict[str, Any] | None:
    """The whole status with `wanted` as the scheduling condition (its transition time kept while
    its status stays), other conditions kept; None when nothing would change."""
    before = _scheduled_condition(group)
    same = before is not None and before.get("status") == wanted["status"]
    condition = {
        **wanted,
        "observedGeneration": int((group.get("metadata") or {}).get("generation") or 0),
        "lastTransitionTime": (before or {}).get("lastTransitionTime") if same else None,
    }
    condition["lastTransitionTime"] = condition["lastTransitionTime"] or timestamp(now)
    if before is not None and all(before.get(k) == v for k, v in condition.items()):
        return None
    others = [dict(c) for c in _conditions(group) if c.get("type") != wanted["type"]]
    return {"conditions": [*others, condition]}


def _condition(group: Body, decision: GroupDecision) -> dict[str, Any] | None:
    if decision.scheduled or decision.on_nodes >= decision.min_member:
        return _made(group, "True", "Scheduled", decision.message)
    if decision.reason == Reason.GANG_INCOMPLETE:
        return None  # kube-scheduler waits for minCount pods without a word
    if decision.code == StatusCode.ERROR:
        return _made(group, "False", SCHEDULER_ERROR, decision.message)
    if decision.code in (StatusCode.UNSCHEDULABLE, StatusCode.UNRESOLVABLE):
        return _made(group, "False", UNSCHEDULABLE, decision.message)
    return None


def _made(group: Body, status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": condition_type(group), "status": status, "reason": reason,
            "message": message[:MAX_MESSAGE]}


def _event(group: Body, decision: GroupDecision) -> Event:
    """A Warning per reason, not per number: the condition is rewritten as the free GPUs
    move, its Event is not (`about`: the reason alone)."""
    if decision.scheduled or decision.on_nodes >= decision.min_member:
        return Event(group, "Normal", "Scheduled", decision.message, topic="scheduling")
    reason = str(decision.reason)
    return Event(group, "Warning", reason, decision.message, topic="scheduling", about=reason)
