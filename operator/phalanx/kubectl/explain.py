"""`kubectl phalanx explain pg NAME`: why a gang waits, in plain words with the numbers.

Two sources side by side: what the operator last wrote on the PodGroup (phase,
conditions, the room held for it), and a fresh plan, the core's `run_cycle` over the live
cluster, which is what the operator's next cycle would decide if nothing changes: where
it would go, or why it waits, whether preemption or reclaim could help, and which pods it
would evict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from phalanx.core.admission.members import GroupWork, build_works
from phalanx.core.model.names import GPU, GroupKey, key_of
from phalanx.core.model.result import CycleResult, GroupDecision
from phalanx.core.snapshot.picture import Snapshot
from phalanx.core.snapshot.resources import format_resources, total_of
from phalanx.kubectl.queues import QueueRow, queue_rows, usage_cell
from phalanx.observe.gpu_usage import gpu_usage

MAX_LISTED = 5


def explain_group(group: Mapping[str, Any], snapshot: Snapshot, result: CycleResult) -> str:
    meta = group.get("metadata", {})
    key = GroupKey(key_of(str(meta.get("namespace")), str(meta.get("name"))))
    invalid = snapshot.index.invalid_groups.get(key)
    if invalid is not None:
        return f"PodGroup {key} is invalid, so Phalanx ignores it: {invalid}"
    works = {work.key: work for work in build_works(snapshot.index)}
    decision = result.decision(key)
    work = works.get(key)
    lines = [_header(key, work, decision)]
    if work is not None:
        lines.append(_pods_line(work))
    lines.extend(_written_status(group))
    lines.extend(_held(group))
    lines.append("")
    lines.extend(_plan(decision, result, key))
    lines.extend(_expected_start(group, decision, result, key))
    lines.extend(_evictions(result, key))
    if work is not None:
        rows = {row.name: row for row in queue_rows(snapshot)}
        lines.extend(_queue_lines(work, rows.get(work.queue), works, result))
    lines.append(_cluster_line(snapshot))
    return "\n".join(lines)


def _header(key: str, work: GroupWork | None, decision: GroupDecision | None) -> str:
    if work is None or decision is None:
        return f"PodGroup {key}: no pods and no decision yet"
    topology = ""
    spec = work.group.topology if work.group is not None else None
    if spec is not None and (spec.required or spec.preferred):
        kind, level = (
            ("required", spec.required) if spec.required else ("preferred", spec.preferred)
        )
        topology = f", topology {kind} {level} of NetworkTopology {spec.network_topology}"
        if spec.sub_group is not None:
            topology += f" (every {spec.sub_group.size} pods in one {spec.sub_group.required})"
    return (
        f"PodGroup {key}: queue {work.queue}, minMember {work.min_member}, "
        f"priority {work.priority}{topology}"
    )


def _pods_line(work: GroupWork) -> str:
    gang = work.gang
    need = format_resources(total_of(pod.requests for pod in gang)) if gang else "nothing"
    return (
        f"Pods: {len(work.running)} on nodes, {len(work.waiting)} waiting "
        f"({len(gang)} needed together, requesting {need} in total)"
    )


def _written_status(group: Mapping[str, Any]) -> list[str]:
    status = group.get("status") or {}
    if not status:
        return ["Status: none written yet (is the operator running?)"]
    lines = [f"Status (from the operator): phase {status.get('phase', 'unknown')}"]
    for condition in status.get("conditions") or []:
        reason = condition.get("reason", "")
        message = condition.get("message", "")
        since = condition.get("lastTransitionTime", "")
        text = f"  {condition.get('type')}={condition.get('status')}"
        text += f" {reason}" if reason else ""
        text += f": {message}" if message else ""
        text += f" (since {since})" if since else ""
        lines.append(text)
    return lines


def _held(group: Mapping[str, Any]) -> list[str]:
    """The room the operator holds for the group (status.nominated), if any."""
    held = (group.get("status") or {}).get("nominated")
    if not isinstance(held, Mapping):
        return []
    nodes = [str(n) for n in held.get("nodes") or []]
    return [
        f"  Room held for it: {len(nodes)} nodes ({held.get('reason')} since "
        f"{held.get('since')}, until {held.get('expires')}): {_listed(nodes)}"
    ]


def _expected_start(
    group: Mapping[str, Any], decision: GroupDecision | None, result: CycleResult, key: str
) -> list[str]:
    """When the waiting group is expected to start: the fresh plan's estimate (from the
    runtime limits of what runs), else what the operator last wrote
    (status.expectedStart)."""
    if decision is None or decision.scheduled:
        return []
    planned = next((e for e in result.expected_starts if e.group == key), None)
    if planned is not None:
        return [f"  Expected start: {planned.message}"]
    written = (group.get("status") or {}).get("expectedStart")
    if isinstance(written, Mapping) and written.get("message"):
        return [f"  Expected start (from the operator): {written['message']}"]
    return []


def _evictions(result: CycleResult, key: str) -> list[str]:
    """The pods the plan evicts for the group, by victim group."""
    mine = [e for e in result.evictions if e.preemptor == key]
    if not mine:
        return []
    by_victim: dict[str, list[str]] = {}
    for eviction in mine:
        by_victim.setdefault(f"{eviction.group or eviction.pod} ({eviction.reason})", []).append(
            eviction.pod)
    victims = [f"{victim}: {len(pods)} pods" for victim, pods in sorted(by_victim.items())]
    return [f"  Would evict {len(mine)} pods: {_listed(victims)}"]


def _plan(decision: GroupDecision | None, result: CycleResult, key: str) -> list[str]:
    if decision is None:
        return ["Now: nothing to decide (the group has no pods)."]
    if decision.scheduled:
        bound = [b for b in result.bindings if b.group == key]
        if not bound:
            return [
                f"Now: scheduled; {decision.placed} of {decision.min_member} pods are on nodes."
            ]
        lines = [f"Now: would place {len(bound)} pods: {decision.message}"]
        if decision.placement is not None:
            placement = decision.placement
            if placement.level is not None:
                domains = ", ".join(name for _, name in placement.domains)
                lines.append(f"  in {placement.level} {domains}")
            lines.append(f"  on nodes {_listed(placement.nodes)}")
        return lines
    return [f"Now: waits, {decision.reason}: {decision.message}"]


def _queue_lines(
    work: GroupWork,
    row: QueueRow | None,
    works: Mapping[GroupKey, GroupWork],
    result: CycleResult,
) -> list[str]:
    if row is None:
        return [f"Queue {work.queue} does not exist."]
    used = usage_cell(GPU, row)
    lines = [f"Queue {work.queue}: GPUs used/guarantee/capability {used}"]
    ahead = _ahead(work, works, result)
    if ahead:
        lines.append(f"  {len(ahead)} groups ahead of it in the queue: {_listed(ahead)}")
    return lines


def _ahead(work: GroupWork, works: Mapping[GroupKey, GroupWork], result: CycleResult) -> list[str]:
    """Waiting groups of the same queue the scheduler considers first."""
    mine = (-work.priority, work.creation, work.key)
    found = []
    for other in works.values():
        if other.key == work.key or other.queue != work.queue or not other.waiting:
            continue
        decision = result.decision(other.key)
        if decision is not None and decision.scheduled:
            continue
        if (-other.priority, other.creation, other.key) < mine:
            found.append(other.key)
    return sorted(found)


def _cluster_line(snapshot: Snapshot) -> str:
    usage = gpu_usage(snapshot)
    return (
        f"Cluster: {usage.free:g} GPUs free, {usage.allocated:g} allocated; "
        f"{usage.free_unusable_whole_node:g} of the free GPUs are on partly busy nodes; "
        f"{usage.fully_free_nodes} of {usage.gpu_nodes} GPU nodes are completely free."
    )


def _listed(names: Sequence[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    more = len(names) - MAX_LISTED
    return shown + (f" and {more} more" if more > 0 else "")
