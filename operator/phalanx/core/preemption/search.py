"""Choosing the victims inside one domain.

The cost of a victim set, compared in this order: for a gang whose queue may reclaim,
whether it evicts any pod of the gang's own queue (reclaimed units go first, as in
Kueue's preemption, which takes workloads of other ClusterQueues before its own: the
queue is below its guarantee, so a pod of its own evicted now only comes back and
reclaims in turn; in the simulator a 64-GPU gang of team-b was preempted after 4 h for
a high-priority gang of team-b, then reclaimed seven small gangs of team-a itself);
then the highest priority it evicts, then the work it loses at that priority (GPU-seconds
since each victim's last checkpoint, else its start: `units.py`), then all the work it
loses, then GPUs, then pods, then the newest (a clock behind the pods' starts counts no
work lost). "Lowest priority first" counts the work at the top priority
before all work: one 1-GPU high-priority job and seven 1-GPU low ones is cheaper than
one 8-GPU high-priority job (in the simulator, reclaims that took the whole 8-GPU job
left it waiting hours for a node it could preempt again). Without `weigh` (the order
before work lost was weighed) GPUs stand where the work lost does, then pods, then
the oldest start among the victims (later is cheaper).
Going through units cheapest first until the gang fits finds the lowest
highest-priority any fitting set can have (the units below it did not suffice). With
few units at or below that priority (or few units at all: the limits of `allowed`,
such as an elastic group's spare pods, can make the walk miss a fitting set), every
subset is tried and the cheapest fitting one taken; otherwise the fitting prefix is
pruned, most expensive unit first, to a set from which no unit can be dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import islice

from phalanx.core.preemption.room import DomainRoom, KeptRoom
from phalanx.core.preemption.units import Unit

EXACT_UNITS = 10

Cost = tuple[int, int, float, float, float, float, float]
Allowed = Callable[[Sequence[Unit]], bool]


def cost_of(units: Sequence[Unit], own: str | None = None, weigh: bool = True) -> Cost:
    """`own`: the queue of a gang that may reclaim (its units are evicted last);
    `weigh`: by the work the victims lose (else by their size, as before)."""
    if not units:
        return (0, -(1 << 62), 0.0, 0.0, 0.0, 0.0, 0.0)
    top = max(u.priority for u in units)
    mine = int(own is not None and any(u.queue == own for u in units))
    gpus = sum(u.gpus for u in units)
    pods = sum(len(u.pods) for u in units)
    if weigh:
        at_top = sum(u.lost for u in units if u.priority == top)
        newest = -min(u.started for u in units)  # equal work lost: the newest victims
        return (mine, top, at_top, sum(u.lost for u in units), gpus, pods, newest)
    at_top_gpus = sum(u.gpus for u in units if u.priority == top)
    return (mine, top, at_top_gpus, gpus, pods, -min(u.started for u in units), 0.0)


def work_cost(units: Sequence[Unit], weigh: bool = True) -> Cost:
    """For reservations: least running work in the way, whatever its priority."""
    _, _, _, first, second, third, fourth = cost_of(units, weigh=weigh)
    return (0, 0, 0.0, first, second, third, fourth)


def choose(
    room: DomainRoom,
    candidates: Sequence[Unit],
    eligible: Callable[[Unit], bool],
    allowed: Allowed,
    cost: Callable[[Sequence[Unit]], Cost] = cost_of,
) -> tuple[Unit, ...] | None:
    """The cheapest set of the `eligible` `candidates` (given cheapest first) after which
    the gang fits in the room, or None. The room is used up (made for one call).
    Eligibility is asked only of the units the search reaches: a starving gang's
    searches in the Alibaba simulation offered ~8,000 units and walked ~1,300 of them,
    and filtering them all first was a third of the search."""
    if room.fits():
        return ()
    head = list(islice(filter(eligible, candidates), EXACT_UNITS + 1))
    if len(head) <= EXACT_UNITS:
        return _cheapest(room, head, allowed, cost)
    start = room.copy()
    chosen = room.take_until_fits(filter(eligible, candidates), allowed)
    if chosen is None:
        return None
    ceiling = cost([chosen[-1]])[:2]
    pool = _pool(filter(eligible, candidates), ceiling, cost)
    if pool is not None:
        room.give_units(chosen)
        return _cheapest(room, pool, allowed, cost)
    return tuple(_prune(room, start, chosen))


def _pool(
    units: Iterable[Unit], ceiling: tuple[int, ...], cost: Callable[[Sequence[Unit]], Cost]
) -> list[Unit] | None:
    """The units at or below the ceiling (own queue, then priority), if few enough to
    try every subset."""
    pool: list[Unit] = []
    for unit in units:
        if cost([unit])[:2] <= ceiling:
            pool.append(unit)
            if len(pool) > EXACT_UNITS:
                return None
    return pool


def _prune(room: DomainRoom, start: DomainRoom, chosen: list[Unit]) -> list[Unit]:
    """Drop units, most expensive first, while the gang fits without them. A unit is
    dropped when the gang fits with the units below it and those kept above it, which
    only gets likelier as more units are taken; so once the kept units alone (`start`,
    the room before the walk, with them taken) make it fit, every unit below goes too
    and the walk stops there. A starving gang's searches in the Alibaba simulation
    kept 4 of ~1,380 units, the lowest at 1,269: each unit tried below that cost about
    as much as taking it. Taken and given back nodes count the room the state gives
    them (`_room` counts as the state does), so `start` fitting means the walk would
    have dropped them all; `KeptRoom` fills that room only when it could fit (bench-core's
    preempt: prune 0.043 -> 0.023 s under cProfile). Dropped units are set apart, not
    removed from the list one by one (a `list.remove` each was quadratic)."""
    dropped: set[int] = set()
    kept = KeptRoom(start, room)
    for position in range(len(chosen) - 1, -1, -1):
        unit = chosen[position]
        if room.fits_without((unit,)):
            room.give_units((unit,))
            dropped.add(id(unit))
            continue
        if kept.keep(unit):
            dropped.update(id(below) for below in chosen[:position])
            break
    return [unit for unit in chosen if id(unit) not in dropped]


def _cheapest(
    room: DomainRoom,
    pool: list[Unit],
    allowed: Allowed,
    cost: Callable[[Sequence[Unit]], Cost],
) -> tuple[Unit, ...] | None:
    best: tuple[Unit, ...] | None = None
    best_cost: Cost | None = None
    for mask in range(1, 1 << len(pool)):
        subset = tuple(u for i, u in enumerate(pool) if mask >> i & 1)
        subset_cost = cost(subset)
        if best_cost is not None and subset_cost >= best_cost:
            continue
        if not allowed(subset):
            continue
        room.take_units(subset)
        fits = room.fits()
        room.give_units(subset)
        if fits:
            best, best_cost = subset, subset_cost
    return best
