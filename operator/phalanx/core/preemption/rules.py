"""Who may evict whom: preemption within a queue, reclaim across queues.

Preemption: a gang may evict units of strictly lower priority in its own queue, unless
its PriorityClass says `preemptionPolicy: Never`. Reclaim: a queue whose chain (the
queue and its parents) is within its guarantee even with the gang admitted may take
from queues outside that chain, whatever their priority, as long as every queue that
loses pods is reclaimable and stays at or above its own guarantee. Either way a gang
that has run less than its queue's minimum runtime for that kind of eviction
(`preemptMinRuntimeSeconds`, `reclaimMinRuntimeSeconds`, else its parents') is kept:
it just paid its start-up cost (KAI's preemptMinRuntime / reclaimMinRuntime).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from phalanx.core.admission.queues import QueueLedger
from phalanx.core.model.eviction import EvictionReason
from phalanx.core.model.inputs import PREEMPT_NEVER
from phalanx.core.model.names import GroupKey
from phalanx.core.preemption.units import Unit
from phalanx.core.snapshot.index import ClusterIndex


@dataclass(slots=True)
class Claim:
    """What one waiting gang may take. `budgets`: per queue that reclaim may shrink,
    how much of each guaranteed resource it may lose (absent: no limit). Not frozen,
    though never changed (`dataclasses.replace` makes another): one is made for each
    gang that cannot be placed, as `GangRequest` is."""

    group: str
    queue: str
    priority: int
    preempt: bool
    reclaim: bool
    chain: tuple[str, ...]
    budgets: Mapping[str, Mapping[str, int]]
    closed: frozenset[str]
    now: float = 0.0
    min_runtimes: Mapping[str, tuple[int | None, int | None]] | None = None
    """Per queue with one, its minimum runtime before preemption and before reclaim."""

    def reason(self, unit: Unit) -> EvictionReason | None:
        """Why `unit` may be evicted for this gang (None: it may not)."""
        if unit.group == self.group:
            return None
        if unit.queue == self.queue:
            if self.preempt and unit.priority < self.priority and self.ran_long(unit, 0):
                return EvictionReason.PREEMPTED
            return None
        if self.reclaim and unit.queue not in self.closed and self.ran_long(unit, 1):
            return EvictionReason.RECLAIMED
        return None

    def ran_long(self, unit: Unit, kind: int) -> bool:
        """Has the unit run its queue's minimum runtime for preemption (`kind` 0) or
        reclaim (1)? A pod not started yet has run nothing."""
        minima = self.min_runtimes.get(unit.queue) if self.min_runtimes else None
        minimum = minima[kind] if minima is not None else None
        if minimum is None:
            return True
        ran = self.now - unit.started if unit.ran else 0.0
        return ran >= minimum

    def may_take(self, bounds: Mapping[str, tuple[int, int]]) -> bool:
        """Could `reason` allow any unit, given each queue's lowest and highest unit
        priority (`priority_bounds`)? False proves that no unit may be evicted for
        this gang, before any unit is built."""
        for queue, (low, _) in bounds.items():
            if queue == self.queue:
                if self.preempt and low < self.priority:
                    return True
            elif self.reclaim and queue not in self.closed:
                return True
        return False

    def within(self, units: Iterable[Unit], chains: Mapping[str, tuple[str, ...]]) -> bool:
        """Do the reclaimed units leave every losing queue at or above its guarantee?"""
        if not self.budgets:
            return True
        taken: dict[str, dict[str, int]] = {}
        for unit in units:
            if unit.queue == self.queue:
                continue
            for name in chains[unit.queue]:
                budget = self.budgets.get(name)
                if budget is None:
                    continue
                used = taken.setdefault(name, {})
                for resource, limit in budget.items():
                    used[resource] = used.get(resource, 0) + unit.requests.get(resource, 0)
                    if used[resource] > limit:
                        return False
        return True


def claim_for(
    index: ClusterIndex,
    ledger: QueueLedger,
    group: str,
    queue: str,
    priority: int,
    priority_class: str | None,
    now: float = 0.0,
) -> Claim:
    """The claim of a gang just admitted (its need is already in the ledger), at `now`."""
    chain = ledger.chain(queue)
    reclaim = _below_guarantee(ledger, chain)
    budgets: dict[str, dict[str, int]] = {}
    closed: set[str] = set()
    if reclaim:
        for name, info in ledger.queues.items():
            if name in chain:
                continue
            if not info.reclaimable:
                closed.add(name)
            if info.guarantee:
                used = ledger.used.get(name, {})
                budgets[name] = {r: used.get(r, 0) - g for r, g in info.guarantee.items()}
        closed |= {q for q in ledger.queues if _closed_by_ancestor(ledger, q, chain, closed)}
    return Claim(
        group=group,
        queue=queue,
        priority=priority,
        preempt=may_preempt(index, priority_class, _own_policy(index, group)),
        reclaim=reclaim,
        chain=chain,
        budgets=budgets,
        closed=frozenset(closed),
        now=now,
        min_runtimes=min_runtimes(ledger),
    )


def min_runtimes(ledger: QueueLedger) -> dict[str, tuple[int | None, int | None]]:
    """Per queue, its minimum runtimes before preemption and reclaim: its own, else the
    nearest parent's; queues with neither are left out."""
    found: dict[str, tuple[int | None, int | None]] = {}
    for name in ledger.queues:
        chain = [ledger.queues[q] for q in ledger.chain(name)]
        preempt = next((q.preempt_min_runtime_seconds for q in chain
                        if q.preempt_min_runtime_seconds is not None), None)
        reclaim = next((q.reclaim_min_runtime_seconds for q in chain
                        if q.reclaim_min_runtime_seconds is not None), None)
        if preempt is not None or reclaim is not None:
            found[name] = (preempt, reclaim)
    return found


def _own_policy(index: ClusterIndex, group: str) -> str | None:
    info = index.groups.get(GroupKey(group))
    return info.preemption_policy if info is not None else None


def may_preempt(
    index: ClusterIndex, priority_class: str | None, own_policy: str | None = None
) -> bool:
    """False when the group's own preemptionPolicy (Kubernetes' PodGroup), else its
    PriorityClass's (else the global default's) says `Never`."""
    if own_policy is not None:
        return own_policy != PREEMPT_NEVER
    policies = index.preemption_policies
    policy = policies.get(priority_class, "") if priority_class else index.default_policy
    return policy != PREEMPT_NEVER


def _below_guarantee(ledger: QueueLedger, chain: tuple[str, ...]) -> bool:
    """Some queue of the chain has a guarantee, and none is above it (gang included)."""
    guaranteed = False
    for name in chain:
        guarantee = ledger.queues[name].guarantee
        if not guarantee:
            continue
        guaranteed = True
        used = ledger.used.get(name, {})
        if any(used.get(r, 0) > g for r, g in guarantee.items()):
            return False
    return guaranteed


def _closed_by_ancestor(
    ledger: QueueLedger, queue: str, chain: tuple[str, ...], closed: set[str]
) -> bool:
    """A queue is closed to reclaim when it or a parent outside the reclaimer's chain is
    not reclaimable (shared parents lose nothing: the room stays inside them)."""
    return any(name in closed for name in ledger.chain(queue) if name not in chain)


def guarantee_message(ledger: QueueLedger, chain: tuple[str, ...]) -> str | None:
    """Why the gang's queue may not reclaim ("queue team-a is at its guarantee")."""
    guaranteed = [name for name in chain if ledger.queues[name].guarantee]
    if not guaranteed:
        return None
    for name in guaranteed:
        guarantee = ledger.queues[name].guarantee or {}
        used = ledger.used.get(name, {})
        if any(used.get(r, 0) > g for r, g in guarantee.items()):
            return f"queue {name} is at its guarantee"
    return None
