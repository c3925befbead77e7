"""Admission (Pending -> Inqueue): which groups may try to place pods this cycle.

Groups are taken by priority; within one priority a partly placed gang goes first, since
its bound pods hold GPUs idle until the rest joins them (a failed binding, a lost node or
an operator killed between two of the gang's bindings leaves one; not before a higher
priority, which would evict what it just completed). Then the weighted dominant resource
share of their queue (lowest first; plus its decayed past usage when fair sharing keeps
history: usage.py), then creation time, then key; but across queues, a group whose queue
stays within its guarantee goes before one whose queue would go above it (borrow),
whatever their priorities, as Kueue orders its heads. Room that frees up goes to the
queue it is owed to: given to a borrowing group first, the other queue would reclaim it
a moment later (in the simulator a 1-GPU high-priority job of team-a was placed in freed
room and reclaimed by team-b six times in a row).

A group is admitted when its queue and every ancestor have room under `capability`
for what its gang needs: `minResources` (less what its running pods already use) or,
if larger, the requests of the gang's pods.

Each admitted group is placed at once (`place`); one that cannot be placed, and for
which no room is being freed by evictions, gives its reservation back before the next
group is considered, so a gang that fits nowhere never keeps a queue's later groups
waiting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from phalanx.core.admission.members import GroupWork, Problem
from phalanx.core.admission.queues import QueueLedger, Shortfall
from phalanx.core.admission.usage import history_share
from phalanx.core.model.names import DEFAULT_QUEUE, GroupKey
from phalanx.core.model.status import Reason, StatusCode
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.snapshot.resources import Resources, maximum, subtract


@dataclass(frozen=True, slots=True)
class OverCapability:
    """A gang its queue has no room for: the first queue of the chain without room
    (`shortfall`, as the gang's message reports it), and how much of each resource the
    chain must give back for the gang to fit under every capability on it (`excess`)."""

    shortfall: Shortfall
    excess: dict[str, int]


@dataclass(frozen=True, slots=True)
class Admission:
    admitted: tuple[GroupWork, ...]
    rejected: dict[GroupKey, Problem]


def seed_ledger(
    index: ClusterIndex,
    works: Sequence[GroupWork],
    now: float = 0.0,
    half_life: float = 0.0,
) -> QueueLedger:
    """Queue usage of pods already on nodes, added up per queue before it goes into the
    ledger (an update of the queue's whole chain per running group was 10,000 a cycle);
    with each queue's past usage decayed to `now` (`half_life`: the global half-life)."""
    ledger = QueueLedger(index.queues, queue_history(index, now, half_life))
    usage: dict[str, dict[str, int]] = {}
    for work in works:
        running = work.running_requests()
        if running and work.queue in index.queues:
            total = usage.setdefault(work.queue, {})
            for resource, amount in running.items():
                total[resource] = total.get(resource, 0) + amount
    for queue, total in usage.items():
        ledger.add(queue, total)
    ledger.add(DEFAULT_QUEUE, index.loose_requests)
    return ledger


def queue_history(index: ClusterIndex, now: float, half_life: float) -> dict[str, float]:
    """Each queue's decayed usage as a share of the cluster (none when no queue keeps
    any: the order is then DRF on what runs now)."""
    history = {
        name: history_share(queue, index.cluster_total, now, half_life)
        for name, queue in index.queues.items()
    }
    return {name: share for name, share in history.items() if share > 0}


def gang_need(work: GroupWork) -> dict[str, int]:
    """What admitting the group reserves in its queue."""
    requests = work.gang_requests()
    if work.group is None or work.group.min_resources is None:
        return requests
    running = work.running_requests()
    rest = {r: max(0, a) for r, a in subtract(work.group.min_resources, running).items()}
    return maximum(requests, rest)


def admit(
    index: ClusterIndex,
    works: Sequence[GroupWork],
    ledger: QueueLedger,
    place: Callable[[GroupWork], bool] | None = None,
    over: Callable[[GroupWork, OverCapability], bool] | None = None,
) -> Admission:
    """`place` tries to place an admitted group's gang; False (neither placed nor given
    room by evictions) releases its reservation. `over` is offered a gang its queue has
    no room for under `capability`, with what is missing: True when it evicted
    lower-priority work of the queue to make room (the victims left the ledger), and the
    gang is admitted."""
    rejected: dict[GroupKey, Problem] = {}
    lines: dict[str, list[GroupWork]] = {}
    needs: dict[GroupKey, dict[str, int]] = {}
    for work in works:
        if work.problem is not None or not work.waiting:
            continue
        need = needs[work.key] = gang_need(work) if work.mandatory else {}
        problem = _precheck(index, work, need, ledger)
        if problem is not None:
            rejected[work.key] = problem
        else:
            lines.setdefault(work.queue, []).append(work)
    for line in lines.values():
        line.sort(key=lambda w: (-w.priority, not w.partial, w.creation, w.key), reverse=True)
    admitted: list[GroupWork] = []
    while lines:
        queue = _next_queue(lines, ledger, index.cluster_total, needs)
        work = lines[queue].pop()
        if not lines[queue]:
            del lines[queue]
        need = needs[work.key]
        shortfall = ledger.shortfall(work.queue, need)
        if shortfall is None:
            ledger.add(work.queue, need)
            admitted.append(work)
            if place is not None and not place(work):
                ledger.add(work.queue, {r: -a for r, a in need.items()})
        elif (
            over is not None
            and work.mandatory
            and over(work, _over(ledger, work.queue, shortfall, need))
        ):
            ledger.add(work.queue, need)
            admitted.append(work)
        else:
            rejected[work.key] = Problem(
                StatusCode.UNSCHEDULABLE, Reason.QUEUE_CAPABILITY, shortfall.message()
            )
    return Admission(tuple(admitted), rejected)


def _next_queue(
    lines: dict[str, list[GroupWork]],
    ledger: QueueLedger,
    total: Resources,
    needs: dict[GroupKey, dict[str, int]],
) -> str:
    if len(lines) == 1:
        return next(iter(lines))

    def rank(queue: str) -> tuple[bool, int, bool, float, float, str]:
        head = lines[queue][-1]
        borrows = _borrows(ledger, queue, needs[head.key])
        return (borrows, -head.priority, not head.partial, ledger.share(queue, total),
                head.creation, head.key)

    return min(sorted(lines), key=rank)


def _over(
    ledger: QueueLedger, queue: str, shortfall: Shortfall, need: Resources
) -> OverCapability:
    """How much of each resource the queue's chain must give back for `need` to fit
    under every capability on it."""
    excess: dict[str, int] = {}
    for name in ledger.chain(queue):
        capability = ledger.queues[name].capability or {}
        used = ledger.used[name]
        for resource, limit in capability.items():
            over = used.get(resource, 0) + need.get(resource, 0) - limit
            if over > 0 and need.get(resource, 0):
                excess[resource] = max(excess.get(resource, 0), over)
    return OverCapability(shortfall, excess)


def _borrows(ledger: QueueLedger, queue: str, need: Resources) -> bool:
    """Would admitting `need` take a queue of the chain above its guarantee? A chain
    without any guarantee always borrows: whatever it runs may be reclaimed."""
    guaranteed = False
    for name in ledger.chain(queue):
        guarantee = ledger.queues[name].guarantee
        if not guarantee:
            continue
        guaranteed = True
        used = ledger.used[name]
        if any(used.get(r, 0) + need.get(r, 0) > g for r, g in guarantee.items()):
            return True
    return not guaranteed


def _precheck(
    index: ClusterIndex, work: GroupWork, need: Resources, ledger: QueueLedger
) -> Problem | None:
    queue = index.queues.get(work.queue)
    if queue is None:
        message = f"queue {work.queue} does not exist"
        return Problem(StatusCode.UNSCHEDULABLE, Reason.QUEUE_NOT_FOUND, message)
    closed = ledger.closed(work.queue)
    if closed is not None:
        return Problem(StatusCode.UNSCHEDULABLE, Reason.QUEUE_CLOSED, f"queue {closed} is closed")
    if queue.namespaces and work.namespace not in queue.namespaces:
        message = f"namespace {work.namespace} may not use queue {queue.name}"
        return Problem(StatusCode.UNSCHEDULABLE, Reason.NAMESPACE_NOT_ALLOWED, message)
    if need:
        shortfall = ledger.shortfall(work.queue, need, empty=True)
        if shortfall is not None:
            return Problem(StatusCode.UNRESOLVABLE, Reason.QUEUE_CAPABILITY, shortfall.message())
    return None
