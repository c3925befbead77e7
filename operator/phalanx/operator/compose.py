"""What the objects should say after a cycle: PodGroup and Queue status, and the Events
announcing a change, composed from the core's `GroupDecision`s.

Pure: no clock reads, no I/O, nothing recounted from raw pods (the decision carries the
counts, the minimum and what is placed). The writer compares what these return with what
the object already shows and patches only the difference, so an idle cluster causes no
writes. Evictions are news too: the victim group's `Preempted` / `Reclaimed` /
`RuntimeLimitExceeded` Event and the preemptor's `EvictionRefused` are composed here
from the core's eviction and what the API server answered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from phalanx.core.admission.node_loss import LostNode, lost_message
from phalanx.core.model.config import SchedulerConfig
from phalanx.core.model.eviction import EvictionReason
from phalanx.core.model.nomination import Nomination
from phalanx.core.model.result import ExpectedStart, GroupDecision, Placement
from phalanx.core.model.status import Reason, StatusCode
from phalanx.operator.cache import Body
from phalanx.operator.events import MAX_MESSAGE, Event, timestamp
from phalanx.operator.evictor import VictimsEvicted
from phalanx.topology.gaps import LevelGap, gaps_message

FAILING = (StatusCode.UNSCHEDULABLE, StatusCode.UNRESOLVABLE, StatusCode.ERROR)
RUNNING_PHASES = ("Running", "Unknown")
FINISHED_PHASES = ("Completed", "Failed")
RUNTIME_LIMIT_EXCEEDED = str(EvictionReason.RUNTIME_LIMIT)
MAX_WAITS_FOR = 64  # groups named in status.expectedStart.waitsFor (the CRD's maxItems)


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
    kind: str, ok: bool | None, reason: str, message: str, now: float, generation: int,
    previous: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """A status condition (`ok` None: status Unknown), its lastTransitionTime kept from
    `previous` while its status stays."""
    status = "Unknown" if ok is None else "True" if ok else "False"
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


@dataclasses.dataclass(frozen=True, slots=True)
class Timing:
    """What the cycle said about a group's time (#31): `estimated`, whether the cycle
    estimated starts (`run_cycle(..., estimate=True)`), and if so `expected`, the group's
    estimate (None: none); `over_limit`, the core's message when it evicts the group for
    running past its runtime limit."""

    estimated: bool = False
    expected: ExpectedStart | None = None
    over_limit: str | None = None


def podgroup_status(
    group: Body, decision: GroupDecision, now: float, timing: Timing | None = None
) -> dict[str, Any]:
    """The status a PodGroup should show after the cycle that made `decision`. A gang
    stopped at its runtime limit is Failed once none of its pods is left (as a Job past
    its deadline), not Unknown: nothing is missing that should run."""
    timing = timing or Timing()
    previous: Mapping[str, Any] = group.get("status") or {}
    conditions_before = previous.get("conditions") or []
    generation = int(group.get("metadata", {}).get("generation") or 0)
    min_member = decision.min_member
    counts = dataclasses.asdict(decision.counts)
    placed = decision.on_nodes
    admitted = decision.admitted or placed >= min_member
    scheduled = placed >= min_member
    failing = not scheduled and decision.code in FAILING
    phase = group_phase(counts, min_member, placed, admitted, previous.get("phase"), failing)
    over_limit = over_limit_condition(timing, now, generation, conditions_before)
    if over_limit is not None and phase == "Unknown" and not counts["pending"] + counts["running"]:
        phase = "Failed"
    # The pods of a finished group were cleaned up: it keeps what it said when it ran.
    kept = {c.get("type"): c for c in conditions_before} if (
        phase in FINISHED_PHASES and not placed) else {}
    if kept:
        failing = False

    placement = previous.get("placement")
    if decision.placement is not None:
        placement = placement_status(decision.placement)

    reason, message = _why(decision, scheduled, placement)
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
    if over_limit is not None:
        conditions.append(over_limit)
    expected = previous.get("expectedStart")
    if scheduled:
        expected = None
    elif timing.estimated:
        expected = expected_start_status(timing.expected)
    return {
        "phase": phase,
        **counts,
        "conditions": conditions,
        "observedGeneration": generation,
        "placement": placement,
        "nominated": nominated_status(decision.nomination),
        "expectedStart": expected,
        "admittedTime": previous.get("admittedTime") or (timestamp(now) if admitted else None),
        "scheduledTime": previous.get("scheduledTime") or (timestamp(now) if scheduled else None),
    }


def over_limit_condition(
    timing: Timing, now: float, generation: int, previous: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """Condition `RuntimeLimitExceeded` (True, the core's message) from the cycle that
    evicts the gang for its runtime limit on; like a Job's DeadlineExceeded it stays, the
    record of why the gang's pods went. None while the gang never ran past its limit.
    Kubernetes' own PodGroups get the same condition (upstream_status.py)."""
    if timing.over_limit is not None:
        return condition(RUNTIME_LIMIT_EXCEEDED, True, RUNTIME_LIMIT_EXCEEDED,
                         timing.over_limit, now, generation, previous)
    before = next((c for c in previous if c.get("type") == RUNTIME_LIMIT_EXCEEDED), None)
    return dict(before) if before is not None and before.get("status") == "True" else None


def expected_start_status(expected: ExpectedStart | None) -> dict[str, Any] | None:
    """`status.expectedStart`: when the waiting group is expected to start (`at` None:
    unknown, it waits for work with no runtime limit), the groups whose ends make its
    room, and that in a sentence; None removes it."""
    if expected is None:
        return None
    return {
        "at": timestamp(expected.at) if expected.at is not None else None,
        "waitsFor": [str(key) for key in expected.waits_for[:MAX_WAITS_FOR]],
        "message": expected.message[:MAX_MESSAGE],
    }


def nominated_status(nomination: Nomination | None) -> dict[str, Any] | None:
    """`status.nominated`: the room held for the group, read back by the core after a
    restart (`GroupInfo.nomination`); None removes it."""
    if nomination is None:
        return None
    return {
        "nodes": list(nomination.nodes),
        "reason": nomination.reason,
        "since": timestamp(nomination.since),
        "expires": timestamp(nomination.expires),
        **({"start": timestamp(nomination.start)} if nomination.start is not None else {}),
    }


def _why(decision: GroupDecision, scheduled: bool, placement: Any) -> tuple[str, str]:
    if scheduled:
        return Reason.SCHEDULED, placement_message(placement) if placement else ""
    return str(decision.reason), decision.message


def group_events(
    group: Body, desired: Mapping[str, Any], decision: GroupDecision, config: SchedulerConfig
) -> list[Event]:
    """The Events that announce what `desired` says and the object does not say yet (a
    new leader has no memory of its Events: the conditions on the object are that memory)."""
    conditions = {c["type"]: c for c in desired["conditions"]}
    before = {c.get("type"): c for c in (group.get("status") or {}).get("conditions") or []}

    def shown(kind: str, fields: tuple[str, ...] = ("status", "reason", "message")) -> bool:
        said = before.get(kind) or {}
        return all(said.get(k) == conditions[kind][k] for k in fields)

    events: list[Event] = []
    admitted = conditions["Admitted"]["status"] == "True" and not shown("Admitted")
    scheduled = conditions["Scheduled"]["status"] == "True" and not shown("Scheduled")
    unschedulable = conditions["Unschedulable"]
    if admitted and not scheduled:
        events.append(Event(group, "Normal", "Admitted", conditions["Admitted"]["message"]))
    if scheduled:  # admitted and placed in one cycle: one Event says both
        message = conditions["Scheduled"]["message"]
        if admitted:
            message = f"{conditions['Admitted']['message']}; {message}"
        events.append(Event(group, "Normal", "Scheduled", message, topic="scheduling"))
    elif (not decision.timed_out and unschedulable["status"] == "True"
          and not shown("Unschedulable", ("status", "reason"))):
        # One Warning per reason: while only the numbers move (free GPUs, room for N pods),
        # the condition keeps them current and no new Event is posted.
        message = unschedulable["message"]
        if unschedulable["reason"] == Reason.GANG_INCOMPLETE:  # counts move while pods arrive
            message = "fewer pods exist than minMember; waiting for the rest"
        # Evicting for it is the scheduler at work, not a problem of the group.
        kind = "Normal" if unschedulable["reason"] == Reason.PREEMPTING else "Warning"
        events.append(Event(group, kind, unschedulable["reason"], message, topic="scheduling"))
    released = _released(group, desired, scheduled or conditions["Scheduled"]["status"] == "True")
    if released is not None:
        events.append(released)
    if decision.timed_out:
        events.append(timeout_event(group, config))
    return events


def _released(group: Body, desired: Mapping[str, Any], scheduled: bool) -> Event | None:
    """The room held for a group that still waits is given up (the hold expired, or
    eviction no longer leads anywhere): others may take it now."""
    held = (group.get("status") or {}).get("nominated")
    if not isinstance(held, Mapping) or desired.get("nominated") is not None or scheduled:
        return None
    nodes = held.get("nodes") or []
    why = next((c["message"] for c in desired["conditions"] if c["type"] == "Unschedulable"
                and c["status"] == "True"), "")
    message = (f"the {len(nodes)} node(s) held for it ({held.get('reason')} since "
               f"{held.get('since')}) are released" + (f"; {why}" if why else ""))
    return Event(group, "Normal", "NominationReleased", message, topic="nomination")


def eviction_event(victim: Body, evicted: VictimsEvicted) -> Event:
    """On the victim's group (or lone pod): how many of its pods went, and for whom. A gang
    past its runtime limit whose workload was stopped first may see its controller delete
    its pods before their evictions land: those count too, as stopped."""
    count, went = len(evicted.evicted), "evicted"
    if evicted.victims.reason is EvictionReason.RUNTIME_LIMIT and evicted.gone:
        count, went = count + len(evicted.gone), "stopped"
    noun = "pod" if count == 1 else "pods"
    return Event(victim, "Warning", evicted.victims.reason,
                 f"{count} {noun} {went}: {evicted.victims.message}", topic="eviction")


def eviction_refused_event(preemptor: Body, evicted: VictimsEvicted) -> Event:
    """On the preemptor: a victim it was given could not be evicted (a budget). A gang
    past its runtime limit is its own preemptor: it is told it keeps running for now."""
    victims = evicted.victims
    pod, reason = next(iter(evicted.refused.items()))
    who = victims.group or pod
    done = (f"{len(evicted.evicted)} of its pods were evicted before that" if evicted.evicted
            else "none of its pods was evicted")
    if victims.reason is EvictionReason.RUNTIME_LIMIT:
        return Event(
            preemptor, "Warning", "EvictionRefused",
            f"evicting {len(evicted.refused)} pod(s) past the runtime limit was refused "
            f"(e.g. {pod}: {reason}); {done}; tried again later", topic="eviction")
    return Event(
        preemptor, "Warning", "EvictionRefused",
        f"evicting {len(evicted.refused)} pod(s) of {who} was refused (e.g. {pod}: {reason}); "
        f"{done}; other victims are chosen, or it waits", topic="eviction")


def timeout_event(group: Body, config: SchedulerConfig) -> Event:
    """One Event per timeout, not one per backoff step: the message has no delay in it."""
    return Event(
        group, "Warning", Reason.TIMEOUT,
        f"not placed within {group['spec'].get('scheduleTimeoutSeconds')}s; still queued, "
        f"retried with backoff ({config.backoff_initial_seconds:g}s doubling to "
        f"{config.backoff_max_seconds:g}s)", topic="timeout")


def binding_failed_event(
    group: Body, placed: Sequence[str], failed: Mapping[str, str]
) -> Event:
    """A gang whose writes partly failed: the placed pods stay, the rest is retried."""
    pod, reason = next(iter(failed.items()))
    return Event(
        group, "Warning", "BindingFailed",
        f"{len(failed)} of {len(failed) + len(placed)} pods not placed (e.g. {pod}: {reason}); "
        "placed pods stay, the rest is retried", topic="binding")


def waiting_message(decision: GroupDecision, group: str | None) -> tuple[str, str]:
    """(prefix, message) a waiting pod shows: the group's reason and the core's sentence.
    The prefix names the reason, so a pod condition tells which reason it last reported
    (a new leader reads it back) without the numbers, which change while the pod waits."""
    prefix = f"PodGroup {group} ({decision.reason}): " if group else f"{decision.reason}: "
    return prefix, prefix + decision.message


def pod_scheduled_condition(
    pod: Body, decision: GroupDecision, message: str, now: float
) -> dict[str, Any]:
    """`PodScheduled=False` as kube-scheduler writes it (reason `Unschedulable`, which the
    cluster autoscaler and dashboards look for; `SchedulerError` for an error)."""
    reason = "SchedulerError" if decision.code is StatusCode.ERROR else "Unschedulable"
    before = [c for c in (pod.get("status") or {}).get("conditions") or []]
    made = condition("PodScheduled", False, reason, message, now, 0, before)
    del made["observedGeneration"]  # not a field of pod conditions
    made["lastProbeTime"] = None
    return made


def failed_scheduling_event(pod: Body, message: str) -> Event:
    """kube-scheduler's Event for a pod it cannot place."""
    return Event(pod, "Warning", "FailedScheduling", message, topic="scheduling")


def node_failed_event(
    group: Body, lost: tuple[LostNode, ...], decision: GroupDecision, placed: Sequence[Body]
) -> Event:
    """On a PodGroup whose placement includes a failed node (deleted, NotReady, NoExecute):
    once per set of failed nodes, not again as its pods are evicted and replaced or as a
    node's state moves on (NotReady, then tainted)."""
    working = sum(1 for p in placed if p.get("spec", {}).get("nodeName") not in
                  {n.node for n in lost})
    return Event(
        group, "Warning", "NodeFailed",
        f"{lost_message(lost)} of this gang failed; {working} of {decision.min_member} pods "
        "run on working nodes; replacement pods go next to the rest when there is room, "
        "otherwise the gang is released after its timeout", topic="node-failed",
        about=",".join(n.node for n in lost))


def group_deleted_event(pod: Body, group: str, bound: int, pods: int, node: str | None) -> Event:
    """On a pod of a gang whose PodGroup was deleted while the gang was being placed."""
    done = f"this pod was bound to {node}" if node else "this pod was not bound"
    return Event(
        pod, "Warning", "GroupDeleted",
        f"PodGroup {group} was deleted while its gang was being placed: {bound} of {pods} pods "
        f"were bound (a binding cannot be undone; delete the pods to free their GPUs), {done}",
        topic="group-deleted")


def degraded_condition(topology: Body, gaps: Sequence[LevelGap], now: float) -> dict[str, Any]:
    """NetworkTopology condition `Degraded`: True while some nodes carry no label of a level
    (a mistyped label key, or nodes not labelled yet); the message names the levels and
    how many nodes lack each."""
    previous = (topology.get("status") or {}).get("conditions") or []
    generation = int(topology.get("metadata", {}).get("generation") or 0)
    if gaps:
        return condition("Degraded", True, "NodesWithoutLevelLabels", gaps_message(tuple(gaps)),
                         now, generation, previous)
    return condition("Degraded", False, "AllNodesLabelled",
                     "every node carries a label of every level", now, generation, previous)


def topology_events(
    topology: Body, desired: Mapping[str, Any], gaps: Sequence[LevelGap]
) -> list[Event]:
    """A Warning when the topology turns Degraded or what it lacks changes (not again while
    the object already says so: a new leader repeats nothing; not for counts alone, as
    unlabelled nodes join: `about` names the levels and whether no node or some lack them)."""
    wanted = {c["type"]: c for c in desired.get("conditions") or []}.get("Degraded")
    if wanted is None or wanted["status"] != "True":
        return []
    before = {c.get("type"): c for c in (topology.get("status") or {}).get("conditions") or []}
    said = before.get("Degraded") or {}
    if said.get("status") == "True" and said.get("message") == wanted["message"]:
        return []
    about = "; ".join(gap.kind for gap in gaps)
    return [Event(topology, "Warning", "Degraded", wanted["message"], topic="degraded",
                  about=about)]


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
