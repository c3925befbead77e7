"""Desired status of PodGroups and Queues, computed from cache state and a cycle's result.

Pure: no clock reads, no I/O. The writer compares what these return with what the
object already shows and patches only the difference, so an idle cluster causes no writes.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from phalanx.core.result import GroupDecision, Placement
from phalanx.core.status import Reason, StatusCode
from phalanx.operator.cache import Body
from phalanx.operator.pods import is_bound, phase_of

MAX_MESSAGE = 1000
FAILING = (StatusCode.UNSCHEDULABLE, StatusCode.UNRESOLVABLE, StatusCode.ERROR)
RUNNING_PHASES = ("Running", "Unknown")
FINISHED_PHASES = ("Completed", "Failed")


def timestamp(now: float) -> str:
    """RFC 3339 in whole seconds, as Kubernetes writes times."""
    moment = datetime.datetime.fromtimestamp(int(now), tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_counts(pods: Iterable[Body]) -> dict[str, int]:
    counts = {"pending": 0, "running": 0, "succeeded": 0, "failed": 0}
    for pod in pods:
        phase = phase_of(pod)
        if phase == "Running":
            counts["running"] += 1
        elif phase == "Succeeded":
            counts["succeeded"] += 1
        elif phase == "Failed":
            counts["failed"] += 1
        else:
            counts["pending"] += 1
    return counts


def group_phase(
    counts: Mapping[str, int],
    min_member: int,
    placed: int,
    admitted: bool,
    previous: str | None,
    unschedulable: bool = False,
) -> str:
    """Pending -> Inqueue -> Running -> Completed | Failed; Unknown when Running falls short.

    Inqueue means admitted and being placed; an admitted group that does not fit stays
    Pending (its Admitted condition is still True), so no group sits Inqueue for ever.
    A finished group stays finished when its pods are deleted; new pods start it again.
    """
    active = counts["pending"] + counts["running"]
    total = active + counts["succeeded"] + counts["failed"]
    if total and not active and counts["succeeded"] + counts["failed"] >= min_member:
        return "Completed" if counts["failed"] == 0 else "Failed"
    if not active and previous in FINISHED_PHASES:
        return previous
    if counts["running"] and counts["running"] + counts["succeeded"] >= min_member:
        return "Running"
    if previous in RUNNING_PHASES:
        return "Unknown"
    if placed >= min_member or (admitted and not unschedulable):
        return "Inqueue"
    return "Pending"


def placement_status(placement: Placement) -> dict[str, Any]:
    names = [name.rsplit("/", 1)[-1] for _, name in placement.domains]
    nodes = list(placement.nodes)
    summary = f"{len(nodes)} node{'s' if len(nodes) != 1 else ''}"
    if placement.level:
        summary = f"{placement.level} {','.join(names)}, {summary}"
        if placement.climbed_levels:
            summary += f" (+{placement.climbed_levels} level)"
    return {
        "networkTopology": placement.network_topology,
        "level": placement.level,
        "climbedLevels": placement.climbed_levels,
        "domains": [{"level": level, "name": name} for level, name in placement.domains],
        "nodes": nodes,
        "summary": summary,
    }


def placement_message(placement: Mapping[str, Any]) -> str:
    level = placement.get("level")
    nodes = placement.get("nodes") or []
    names = ",".join(str(d.get("name")) for d in placement.get("domains") or [])
    where = f"in {level} {names}" if level else "across the cluster"
    text = f"placed {where} on {len(nodes)} node(s)"
    climbed = int(placement.get("climbedLevels") or 0)
    if climbed:
        text += f"; no domain of the preferred level fits, climbed {climbed} level(s)"
    return text


def condition(
    kind: str, ok: bool, reason: str, message: str, now: float, generation: int,
    previous: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    status = "True" if ok else "False"
    before = next((c for c in previous if c.get("type") == kind), None)
    kept = before.get("lastTransitionTime") if before and before.get("status") == status else None
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message[:MAX_MESSAGE],
        "lastTransitionTime": kept or timestamp(now),
        "observedGeneration": generation,
    }


def podgroup_status(
    group: Body,
    pods: Sequence[Body],
    decision: GroupDecision | None,
    now: float,
    timed_out: bool = False,
) -> dict[str, Any]:
    """The status a PodGroup should show after this cycle."""
    previous: Mapping[str, Any] = group.get("status") or {}
    conditions_before = previous.get("conditions") or []
    generation = int(group.get("metadata", {}).get("generation") or 0)
    min_member = int(group.get("spec", {}).get("minMember") or 1)
    counts = pod_counts(pods)
    placed = sum(1 for pod in pods if is_bound(pod))
    admitted = bool(decision and decision.admitted) or placed >= min_member
    scheduled = placed >= min_member
    failing = not scheduled and (timed_out or (decision is not None and decision.code in FAILING))
    phase = group_phase(counts, min_member, placed, admitted, previous.get("phase"), failing)
    # The pods of a finished group were cleaned up: it keeps what it said when it ran.
    kept = {c.get("type"): c for c in conditions_before} if (
        phase in FINISHED_PHASES and not placed) else {}
    if kept:
        failing = False

    placement = previous.get("placement")
    if decision is not None and decision.placement is not None:
        placement = placement_status(decision.placement)

    reason, message = _why(decision, scheduled, placement, timed_out)
    conditions = [
        kept.get("Admitted") or condition(
            "Admitted", admitted, "Admitted" if admitted else reason,
            "admitted to queue" if admitted else message, now, generation, conditions_before),
        kept.get("Scheduled") or condition(
            "Scheduled", scheduled, "Scheduled" if scheduled else reason,
            placement_message(placement) if scheduled and placement else message,
            now, generation, conditions_before),
        condition("Unschedulable", failing, reason if failing else "Schedulable",
                  message if failing else "", now, generation, conditions_before),
    ]
    status: dict[str, Any] = {
        "phase": phase,
        **counts,
        "conditions": conditions,
        "observedGeneration": generation,
        "placement": placement,
        "admittedTime": previous.get("admittedTime") or (timestamp(now) if admitted else None),
        "scheduledTime": previous.get("scheduledTime") or (timestamp(now) if scheduled else None),
    }
    return status


def _why(
    decision: GroupDecision | None, scheduled: bool, placement: Any, timed_out: bool
) -> tuple[str, str]:
    if scheduled:
        return Reason.SCHEDULED, placement_message(placement) if placement else ""
    if decision is None:
        return "Waiting", "waiting for the next scheduling cycle"
    if timed_out:
        return Reason.TIMEOUT, f"not placed within scheduleTimeoutSeconds: {decision.message}"
    return str(decision.reason), decision.message


def queue_status(
    name: str, phases: Iterable[tuple[str, str]], allocated: Mapping[str, str]
) -> dict[str, Any]:
    """`phases` holds (queue, phase) for every PodGroup."""
    counts = {"pending": 0, "inqueue": 0, "running": 0}
    for queue, phase in phases:
        if queue != name:
            continue
        if phase == "Pending":
            counts["pending"] += 1
        elif phase == "Inqueue":
            counts["inqueue"] += 1
        elif phase in RUNNING_PHASES:
            counts["running"] += 1
    return {**counts, "allocated": dict(sorted(allocated.items()))}


def differs(desired: Mapping[str, Any], current: Mapping[str, Any] | None) -> bool:
    """True when a field we own shows something else (fields we do not own are ignored)."""
    current = current or {}
    return any(_normal(current.get(k)) != _normal(v) for k, v in desired.items())


def _normal(value: Any) -> Any:
    """None and absent are the same to the API server after a merge patch."""
    if isinstance(value, Mapping):
        kept = {k: _normal(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None} or None
    if isinstance(value, list):
        return [_normal(v) for v in value] or None
    return value
