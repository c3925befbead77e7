"""Partial gangs: a gang left short of its minMember after a placement write failed.

A binding is final, so pods bound before a sibling's write failed hold their GPUs while
the rest waits; a node failure can leave a running gang short the same way. The next
cycles try to place the missing pods; if the gang is still partial past its deadline
(its scheduleTimeoutSeconds, at least `partial_grace_seconds`), its placed pods are
released: deleted when a controller will recreate them (so the whole gang starts again
together), or left running with a Warning when nothing would recreate them. A Kubernetes
PodGroup that ran whole says how it may lose pods (disruptionMode): `Single`, one at a time,
so the rest keeps running and the replacement waits alone, never released; `All`, only
together, so its running pods are released at once, with no deadline. Decided
here, like every scheduling decision, so the shell only deletes and reports; when a
gang was first seen partial is handed back by the shell each cycle (`partial_since`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from phalanx.core.admission.node_loss import lost_message, lost_nodes
from phalanx.core.model.config import SchedulerConfig
from phalanx.core.model.inputs import DISRUPT_ALL, GroupInfo, PodInfo
from phalanx.core.model.result import GroupDecision, PartialRelease
from phalanx.core.snapshot.picture import Snapshot

WAITING_PHASES = ("Pending", "Inqueue")
RELEASED = "PartialGangReleased"
LEFT_RUNNING = "PartialGang"


def is_partial(decision: GroupDecision, phase: str) -> bool:
    """Some but not all of the gang's minimum is placed and none finished: a gang not yet
    whole, or a running one (Unknown) that lost pods with a failed node."""
    finished = decision.counts.succeeded + decision.counts.failed
    return (0 < decision.placed < decision.min_member and not finished
            and phase in (*WAITING_PHASES, "Unknown"))  # fmt: skip


def release_partial(
    snapshot: Snapshot, decisions: Sequence[GroupDecision], now: float, config: SchedulerConfig
) -> tuple[tuple[GroupDecision, ...], tuple[PartialRelease, ...]]:
    """The decisions with when each partial gang was first seen so, and the releases due
    this cycle."""
    kept: list[GroupDecision] = []
    releases: list[PartialRelease] = []
    for decision in decisions:
        decision, release = _check(snapshot, decision, now, config)
        kept.append(decision)
        if release is not None:
            releases.append(release)
    return tuple(kept), tuple(releases)


def _check(
    snapshot: Snapshot, decision: GroupDecision, now: float, config: SchedulerConfig
) -> tuple[GroupDecision, PartialRelease | None]:
    if not 0 < decision.placed < decision.min_member:  # not partial: most groups, at once
        return decision, None
    group = snapshot.index.groups.get(decision.group)
    if group is None or decision.implicit:
        return decision, None
    if group.disruption is not None and group.ran_whole:
        return _disrupted(snapshot, group, decision)
    if not is_partial(decision, group.phase):
        return decision, None
    since = snapshot.partial_since.get(decision.group, now)
    waiting = replace(decision, partial_since=since)
    if now - since < max(group.schedule_timeout_seconds or 0, config.partial_grace_seconds):
        return waiting, None
    members = snapshot.index.members.get(decision.group)
    placed = members.running if members is not None else ()
    if placed and all(pod.controlled for pod in placed):  # released: the clock starts anew
        return decision, _released(snapshot, group, decision, placed)
    message = (
        f"{len(placed)} of {decision.min_member} pods are placed and the rest cannot be; "
        "the placed pods have no controller and are left running"
    )
    return waiting, PartialRelease(decision.group, (), LEFT_RUNNING, message)


def _disrupted(
    snapshot: Snapshot, group: GroupInfo, decision: GroupDecision
) -> tuple[GroupDecision, PartialRelease | None]:
    """A Kubernetes PodGroup that ran whole and lost pods: kept (Single), or all its
    placed pods released now so it is placed again whole (All)."""
    finished = decision.counts.succeeded + decision.counts.failed
    if group.disruption != DISRUPT_ALL or finished:
        return decision, None
    members = snapshot.index.members.get(decision.group)
    placed = members.running if members is not None else ()
    if not placed or not all(pod.controlled for pod in placed):
        return decision, None
    return decision, _released(snapshot, group, decision, placed, "its disruptionMode is All")


def _released(
    snapshot: Snapshot, group: GroupInfo, decision: GroupDecision, placed: Sequence[PodInfo],
    why: str = "",
) -> PartialRelease:
    """Deleting the placed pods, naming the failed nodes that took the rest, if any."""
    members = snapshot.index.members.get(decision.group)
    tolerations = [pod.tolerations for pod in members.pods] if members is not None else []
    on_nodes = [pod.node_name for pod in placed if pod.node_name]
    lost = lost_nodes([*group.placed_nodes, *on_nodes], snapshot.index, tolerations)
    cause = f" ({lost_message(lost)} failed)" if lost else ""
    because = f" ({why})" if why else ""
    message = (
        f"{len(placed)} of {decision.min_member} pods were placed and the rest could "
        f"not be{cause}; deleted the placed pods{because} so their controller recreates them"
    )
    return PartialRelease(decision.group, tuple(pod.key for pod in placed), RELEASED, message)
