"""Time-decayed queue usage: fair sharing over time (issue #32).

A queue's usage is what it ran, in resource-seconds (milli-units, as every resource map
of the core), with each second weighing less the longer ago it was: after one half-life
half as much, as Slurm's PriorityDecayHalfLife, Kueue's usageHalfLifeTime and KAI's
halfLifePeriod weigh it. So a team that had the cluster to itself yesterday waits behind
one that had nothing, until their usage evens out; a queue's weighted dominant share of
what runs now alone says nothing about yesterday.

The order across queues is by decayed usage plus current allocation, both in
resource-seconds: the allocation counts as the usage it adds in `WINDOW` seconds. Both
are divided by what the whole cluster gives in that window, so the key is the DRF share
of what runs now plus `history_share`, and a queue without usage (half-life 0) has
exactly its DRF share. Why a window of a minute, not the mean life (what the key was
first: usage / (capacity x tau) + share): the allocation term stands for usage the
history does not hold yet, the gangs admitted this cycle (as Kueue's entry penalty
charges an admitted workload at once) and what ran since status.usage was last written
(every `usage_write_seconds`, 30 s by default). Weighed over the mean life instead, the
allocation was worth hours of usage: a team that arrived after another had the cluster
for a day stopped being first as soon as its lead in what runs now passed its deficit
in history, so it got only about (1 + the gap) / 2 of the cluster, and the usages never
met. Over a minute, history decides whenever two queues' usages differ by more than a
minute of their allocations, and the allocation decides (DRF) when they are even.

Pure functions: the shell (and the simulator) keep the usage and the time it was taken
at (`QueueInfo.usage`, `usage_at`); the core decays it to the cycle's `now`. The usage
gained while an allocation runs is integrated exactly, so updating every 30 s or every
hour gives the same usage. Half-life 0 keeps no history: the order is DRF on what runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from phalanx.core.model.inputs import QueueInfo

Usage = Mapping[str, float]  # resource -> decayed milli-unit-seconds
WINDOW = 60.0
"""Seconds of the current allocation that weigh as much as its usage (module docstring):
longer than the default status write interval (30 s), short beside any half-life."""


def _tau(half_life: float) -> float:
    """The mean life: usage that ran at `a` for ever settles at `a * tau`."""
    return half_life / math.log(2)


def kept(dt: float, half_life: float) -> float:
    """The fraction of usage left `dt` seconds later (1 for dt <= 0; 0 at half-life 0)."""
    if half_life <= 0:
        return 0.0
    return math.exp(-max(0.0, dt) / _tau(half_life))


def decay(usage: Usage, dt: float, half_life: float) -> dict[str, float]:
    """The usage `dt` seconds later, with nothing running meanwhile."""
    factor = kept(dt, half_life)
    return {r: u * factor for r, u in usage.items() if u * factor > 0}


def accrue(
    usage: Usage, allocation: Mapping[str, float], dt: float, half_life: float
) -> dict[str, float]:
    """The usage `dt` seconds later while `allocation` (milli-units) ran all along:
    the old usage decayed plus the integral of the allocation, each second decayed
    from when it ran (a * tau * (1 - kept)): exact, not an Euler step, so splitting dt
    changes nothing."""
    if half_life <= 0:
        return {}
    tau = _tau(half_life)
    gained = -tau * math.expm1(-max(0.0, dt) / tau)  # tau * (1 - kept), exact for tiny dt
    result = decay(usage, dt, half_life)
    for resource, amount in allocation.items():
        total = result.get(resource, 0.0) + max(0.0, amount) * gained
        if total > 0:
            result[resource] = total
    return result


def half_life_of(queue: QueueInfo, default: float) -> float:
    """The queue's own half-life, else the global one."""
    own = queue.usage_half_life_seconds
    return default if own is None else own


def history_share(
    queue: QueueInfo, total: Mapping[str, int], now: float, default_half_life: float
) -> float:
    """The queue's decayed usage as a weighted dominant share of what the cluster gives
    in `WINDOW` seconds: usage / (capacity * WINDOW), so that, added to its share of what
    runs now (allocation / capacity), the order is by usage + allocation * WINDOW. 0 at
    half-life 0."""
    half_life = half_life_of(queue, default_half_life)
    if half_life <= 0 or not queue.usage:
        return 0.0
    usage = decay(queue.usage, now - queue.usage_at, half_life)
    dominant = 0.0
    for resource, amount in usage.items():
        capacity = total.get(resource, 0)
        if capacity > 0:
            dominant = max(dominant, amount / (capacity * WINDOW))
    return dominant / max(1, queue.weight)
