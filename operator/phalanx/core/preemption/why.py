"""Why eviction does not help a waiting gang, in words a user can act on.

The search is run again with every running gang of the gang's queue allowed, whatever
its priority: if that fits, the message says how many gangs of priority at or above
the gang's own it would take ("would need 3 gangs of priority >= 1000"); reclaim
names the queue that stands in the way ("queue team-b is at its guarantee"). A gang
its queue's capability has no room for is told what evicting the lower-priority gangs
of its queue would give back (`capability_note`).
Where every running pod and the gang share one priority and no queue has a guarantee,
nothing is said: priorities are not in use, and the note would only be noise. Both
that and a queue with nothing running are read from the priority bounds
(`priority_bounds`), so such a note builds no eviction units.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from phalanx.core.admission.queues import QueueLedger, Shortfall
from phalanx.core.placement.gang import GangRequest
from phalanx.core.placement.routes import Route
from phalanx.core.preemption.find import Finder
from phalanx.core.preemption.rules import Claim, guarantee_message
from phalanx.core.preemption.search import cost_of
from phalanx.core.preemption.units import Unit
from phalanx.core.snapshot.resources import display_name, format_amount

PREEMPTION_OFF = "preemption is off for it (preemptionPolicy Never)"


def why_not(
    finder: Finder,
    request: GangRequest,
    route: Route,
    claim: Claim,
    ledger: QueueLedger,
    taken: set[int],
) -> str:
    parts = [_preemption(finder, request, route, claim, taken)]
    parts.append(_reclaim(finder, claim, ledger))
    return "".join(f"; {part}" for part in parts if part)


def _preemption(
    finder: Finder, request: GangRequest, route: Route, claim: Claim, taken: set[int]
) -> str:
    if not claim.preempt:
        return PREEMPTION_OFF
    refused = finder.state.index.eviction_refused
    if not refused and finder.only_priority(claim.priority):
        return ""  # priorities not in use (refused pods are in no unit: say why then)

    def same_queue(unit: Unit) -> bool:
        return unit.queue == claim.queue and unit.group != claim.group and id(unit) not in taken

    found = None
    if claim.queue in finder.bounds or finder.leaving:  # else no room could be freed
        found = finder.find(request, route, same_queue, lambda _: True, cost_of, phases=(True,))
    if found is None:
        if refused:
            return (
                f"preemption cannot help: {len(refused)} pods may not be evicted now "
                f"(PodDisruptionBudget), and the rest of queue {claim.queue} is not enough"
            )
        return (
            f"preemption cannot help: it would not fit with every gang of queue {claim.queue} gone"
        )
    higher = [u for u in found.units if u.priority >= claim.priority]
    if not found.units:
        return "pods terminating there will make room for it"
    young = [u for u in found.units if u.priority < claim.priority and not claim.ran_long(u, 0)]
    if young and not higher:
        return _too_young(claim, young)
    if not higher:
        return "preemption cannot help now: its victims are taken or limited (minMember)"
    noun = "gang" if len(higher) == 1 else "gangs"
    return (
        f"preemption cannot help: would need {len(higher)} {noun} of priority >= {claim.priority}"
    )


def _too_young(claim: Claim, young: Sequence[Unit]) -> str:
    """The gangs in its way are protected by their queue's minimum runtime."""
    minima = claim.min_runtimes or {}
    queue = young[0].queue
    minimum = minima[queue][0] if queue in minima else None
    noun = "gang" if len({u.group or u.key for u in young}) == 1 else "gangs"
    return (
        f"preemption cannot help yet: the {noun} in its way ran less than queue {queue}'s "
        f"preemptMinRuntimeSeconds ({minimum}s)"
    )


def _reclaim(finder: Finder, claim: Claim, ledger: QueueLedger) -> str:
    at_guarantee = guarantee_message(ledger, claim.chain)
    if at_guarantee is not None:
        return f"reclaim cannot help: {at_guarantee}"
    if not claim.reclaim:
        return ""
    queues = sorted({u.queue for u in finder.units if u.queue != claim.queue})
    blocked = [reason for q in queues if (reason := _blocked(claim, ledger, q)) is not None]
    if not blocked:
        return ""
    return "reclaim cannot help: " + ", ".join(blocked)


def _blocked(claim: Claim, ledger: QueueLedger, queue: str) -> str | None:
    if queue in claim.closed:
        chain = [name for name in ledger.chain(queue) if name not in claim.chain]
        locked = next((n for n in chain if not ledger.queues[n].reclaimable), queue)
        if locked != queue:
            return f"queue {queue} is not reclaimable (its parent {locked} is not)"
        return f"queue {queue} is not reclaimable"
    budget = claim.budgets.get(queue)
    if budget is not None and any(amount <= 0 for amount in budget.values()):
        return f"queue {queue} is at its guarantee"
    return None


def capability_note(
    shortfall: Shortfall, queue: str, units: Sequence[Unit], excess: Mapping[str, int]
) -> str:
    """Why evicting lower-priority gangs of the gang's `queue` (`units`: those it may
    evict) does not make room under the capability `shortfall` names: together they
    hold less than the chain must give back (`excess`), the first resource short named;
    or (`excess` covered) they give it back, but no choice of them leaves room on the
    nodes for the gang."""
    resource = shortfall.resource
    used = format_amount(resource, shortfall.used)
    cap = format_amount(resource, shortfall.capability)
    head = (
        f"preemption cannot help: queue {shortfall.queue} is at its capability "
        f"({used} of {cap} {display_name(resource)})"
    )
    whole = [u for u in units if u.whole]
    if not whole:
        return f"{head}; {queue} runs nothing of lower priority to evict"
    for name in sorted(excess, key=lambda r: (r != resource, r)):
        freed = sum(u.requests.get(name, 0) for u in whole)
        if freed < excess[name]:
            return (
                f"{head}; evicting every lower-priority gang of {queue} would free "
                f"{format_amount(name, freed)} {display_name(name)}, "
                f"{format_amount(name, excess[name])} must be freed"
            )
    return (
        f"{head}; evicting lower-priority gangs of {queue} would give that back, "
        "but it would still not fit on the nodes"
    )
