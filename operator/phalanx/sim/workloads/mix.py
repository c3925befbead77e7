"""Priorities and queues laid over a generated trace (the `priorities:` and `queues:` keys).

A full cluster is where preemption and reclaim matter, so the mix keeps the base
trace (sizes, durations, offered load) and changes only who is urgent and who pays:
- `priorities`: a `highShare` of the jobs, picked at random, get priority `high`
  (the others `low`); they arrive in bursts of `burst` jobs: every job of a burst
  arrives with the burst's first, as when a team submits a sweep or an incident
  brings a batch of urgent jobs.
- `queues`: each job goes to a queue at random by the queues' `share`; a queue's
  `guarantee` and `capability` are in GPUs, `reclaimable` defaults to true.
- `checkpoints`: a `share` of the jobs, picked at random, save their progress every
  `intervalSeconds` (drawn uniformly from the `[low, high]` given), as a training job
  that checkpoints on a timer; an eviction then loses only the work since the last save.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from phalanx.sim.model import JobSpec, SimQueue

SALT = 7919
"""Offsets the seed so the mix's draws do not repeat the base generator's."""


def queues_from_spec(spec: Mapping[str, Any]) -> tuple[SimQueue, ...]:
    return tuple(
        SimQueue(
            name=str(item["name"]),
            guarantee_gpus=_count(item.get("guarantee")),
            capability_gpus=_count(item.get("capability")),
            reclaimable=bool(item.get("reclaimable", True)),
        )
        for item in spec.get("queues") or ()
    )


def _count(value: Any) -> int | None:
    return None if value is None else int(value)


def apply_mix(jobs: Sequence[JobSpec], spec: Mapping[str, Any], seed: int) -> list[JobSpec]:
    """The jobs with the spec's priorities and queues (unchanged when it has neither)."""
    rng = random.Random(seed * SALT)
    mixed = list(jobs)
    queues = spec.get("queues") or ()
    if queues:
        names = [str(q["name"]) for q in queues]
        shares = [float(q.get("share", 1.0)) for q in queues]
        mixed = [replace(j, queue=rng.choices(names, shares)[0]) for j in mixed]
    priorities = spec.get("priorities")
    if priorities:
        mixed = _prioritise(mixed, priorities, rng)
    checkpoints = spec.get("checkpoints")
    if checkpoints:  # drawn apart: the priorities and queues stay those without them
        mixed = _checkpoint(mixed, checkpoints, random.Random(seed * SALT + 1))
    return sorted(mixed, key=lambda j: (j.arrival, j.name))


def _checkpoint(jobs: list[JobSpec], spec: Mapping[str, Any], rng: random.Random) -> list[JobSpec]:
    share = float(spec.get("share", 0.5))
    low, high = (int(x) for x in spec.get("intervalSeconds", (1800, 3600)))
    picked = set(rng.sample(range(len(jobs)), round(share * len(jobs))))
    return [
        replace(job, checkpoint_interval_seconds=rng.randint(low, high)) if i in picked else job
        for i, job in enumerate(jobs)
    ]


def _prioritise(jobs: list[JobSpec], spec: Mapping[str, Any], rng: random.Random) -> list[JobSpec]:
    share = float(spec.get("highShare", 0.2))
    high, low = int(spec.get("high", 1000)), int(spec.get("low", 0))
    burst = max(1, int(spec.get("burst", 1)))
    picked = sorted(rng.sample(range(len(jobs)), round(share * len(jobs))))
    out = [replace(j, priority=low) for j in jobs]
    for start in range(0, len(picked), burst):
        members = picked[start : start + burst]
        arrival = jobs[members[0]].arrival
        for index in members:
            out[index] = replace(jobs[index], priority=high, arrival=arrival)
    return out
