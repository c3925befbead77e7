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
out), so its `Unschedulable` reason is the one that fits.

What a Phalanx PodGroup says about time (#31) is said here too, in the only form the
upstream status has room for, conditions (v1beta1's status holds `conditions` and
`resourceClaimStatuses`, nothing else): `RuntimeLimitExceeded` (True, kept, as on a Phalanx
PodGroup) once the gang is evicted for running past its runtime limit, and `ExpectedStart`
while it waits: True with reason `Estimated` and the RFC 3339 time at the end of the
message, Unknown with reason `StartUnknown` when no estimate can be made; removed once the
gang is scheduled. A condition, not an annotation: it is an observation, which belongs in
status; it goes in the status write Phalanx makes anyway, with the `podgroups/status`
permission it has (an annotation is a write to the object itself, which its owner, the
Job controller or the user, watches); and it carries its transition time and generation.
Pure: no clock reads, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from phalanx.core.model.result import ExpectedStart, GroupDecision
from phalanx.core.model.status import Reason, StatusCode
from phalanx.operator.cache import Body
from phalanx.operator.compose import (
    RUNTIME_LIMIT_EXCEEDED,
    Timing,
    condition,
    over_limit_condition,
)
from phalanx.operator.events import Event, timestamp

SCHEDULED = "PodGroupInitiallyScheduled"  # v1beta1, v1alpha3
SCHEDULED_V1ALPHA2 = "PodGroupScheduled"
SCHEDULED_COMPOSITE = "CompositePodGroupInitiallyScheduled"  # a composite's own, v1alpha3
UNSCHEDULABLE = "Unschedulable"
SCHEDULER_ERROR = "SchedulerError"
EXPECTED_START = "ExpectedStart"
ESTIMATED = "Estimated"
START_UNKNOWN = "StartUnknown"
NAMED_WAITS = 8  # groups named in the ExpectedStart message; the rest are counted


@dataclass(frozen=True, slots=True)
class UpstreamReport:
    """`status`: the whole status to write (other conditions kept), None for no write."""

    status: dict[str, Any] | None
    events: tuple[Event, ...] = ()


def upstream_report(
    group: Body, decision: GroupDecision, now: float, timing: Timing | None = None
) -> UpstreamReport:
    """The status after the cycle that made `decision` (`timing`: what it said about time,
    as for a Phalanx PodGroup), and the scheduling Event when that condition changes."""
    timing = timing or Timing()
    previous = _conditions(group)
    generation = _generation(group)
    wanted: dict[str, dict[str, Any] | None] = {}
    scheduling = _scheduling(group, decision, now)
    if scheduling is not None:
        wanted[scheduling["type"]] = scheduling
    over_limit = over_limit_condition(timing, now, generation, previous)
    if over_limit is not None:
        wanted[RUNTIME_LIMIT_EXCEEDED] = over_limit
    if _placed(decision):
        wanted[EXPECTED_START] = None
    elif timing.estimated:
        wanted[EXPECTED_START] = expected_start_condition(
            timing.expected, now, generation, previous)
    status = _merged(group, wanted)
    news = scheduling is not None and _changed(group, scheduling)
    return UpstreamReport(status, (_event(group, decision),) if status and news else ())


def released_status(group: Body, message: str, now: float) -> dict[str, Any] | None:
    """The status of a gang whose partly placed pods were deleted: not scheduled (also
    after True), `message` saying what was released; None if it says so already."""
    kind = condition_type(group)
    made = condition(kind, False, UNSCHEDULABLE, message, now, _generation(group),
                     _conditions(group))
    return _merged(group, {kind: made})


def expected_start_condition(
    expected: ExpectedStart | None, now: float, generation: int,
    previous: Sequence[Mapping[str, Any]],
) -> dict[str, Any] | None:
    """Condition `ExpectedStart` from the core's estimate (None: none, the condition goes):
    True with the time at the end of the message ("... (at 2026-12-05T14:20:00Z)") and the
    groups it waits for; Unknown when the core cannot say (work with no runtime limit, or
    beyond the estimate depth), its message saying which."""
    if expected is None:
        return None
    if expected.at is None:
        return condition(EXPECTED_START, None, START_UNKNOWN, expected.message, now,
                         generation, previous)
    message = f"{expected.message} (at {timestamp(expected.at)})"
    waits = [str(key) for key in expected.waits_for]
    if waits:
        named = ", ".join(waits[:NAMED_WAITS])
        more = len(waits) - NAMED_WAITS
        message += f"; waits for {named}" + (f" and {more} more" if more > 0 else "")
    return condition(EXPECTED_START, True, ESTIMATED, message, now, generation, previous)


def condition_type(group: Body) -> str:
    """The scheduling condition's type in the PodGroup's own kind and API version."""
    if group.get("kind") == "CompositePodGroup":
        return SCHEDULED_COMPOSITE
    version = str(group.get("apiVersion") or "")
    return SCHEDULED_V1ALPHA2 if version.endswith("/v1alpha2") else SCHEDULED


def _placed(decision: GroupDecision) -> bool:
    return decision.scheduled or decision.on_nodes >= decision.min_member


def _generation(group: Body) -> int:
    return int((group.get("metadata") or {}).get("generation") or 0)


def _conditions(group: Body) -> list[Mapping[str, Any]]:
    status: Mapping[str, Any] = group.get("status") or {}
    return [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]


def _changed(group: Body, wanted: Mapping[str, Any]) -> bool:
    before = next((c for c in _conditions(group) if c.get("type") == wanted["type"]), None)
    return before is None or any(before.get(k) != v for k, v in wanted.items())


def _merged(group: Body, wanted: Mapping[str, dict[str, Any] | None]) -> dict[str, Any] | None:
    """The whole status with each condition of `wanted` in place of the one of its type
    (None: removed), new ones after the others, the rest kept; None when nothing changes."""
    before = [dict(c) for c in _conditions(group)]
    after = [wanted.get(str(c.get("type")), c) for c in before]
    present = {c.get("type") for c in before}
    after += [c for kind, c in wanted.items() if kind not in present]
    conditions = [c for c in after if c is not None]
    return None if conditions == before else {"conditions": conditions}


def _scheduling(group: Body, decision: GroupDecision, now: float) -> dict[str, Any] | None:
    """The scheduling condition the decision asks for, or None to leave it as it is
    (nothing to say yet, or it would go back from True to False)."""
    kind = condition_type(group)
    if _placed(decision):
        ok, reason = True, "Scheduled"
    elif decision.reason == Reason.GANG_INCOMPLETE:
        return None  # kube-scheduler waits for minCount pods without a word
    elif decision.code == StatusCode.ERROR:
        ok, reason = False, SCHEDULER_ERROR
    elif decision.code in (StatusCode.UNSCHEDULABLE, StatusCode.UNRESOLVABLE):
        ok, reason = False, UNSCHEDULABLE
    else:
        return None
    previous = _conditions(group)
    before = next((c for c in previous if c.get("type") == kind), None)
    if before is not None and before.get("status") == "True" and not ok:
        return None
    return condition(kind, ok, reason, decision.message, now, _generation(group), previous)


def _event(group: Body, decision: GroupDecision) -> Event:
    """A Warning per reason, not per number: the condition is rewritten as the free GPUs
    move, its Event is not (`about`: the reason alone)."""
    if _placed(decision):
        return Event(group, "Normal", "Scheduled", decision.message, topic="scheduling")
    reason = str(decision.reason)
    return Event(group, "Warning", reason, decision.message, topic="scheduling", about=reason)
