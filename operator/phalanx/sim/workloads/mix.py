"""Priorities and queues laid over a generated trace (the `priorities:` and `queues:` keys).

A full cluster is where preemption and reclaim matter, so the mix keeps the base
trace (sizes, durations, offered load) and changes only who is urgent and who pays:
- `priorities`: a `highShare` of the jobs, picked at random, get priority `high`
  (the others `low`); they arrive in bursts of `burst` jobs: every job of a burst
  arrives with the burst's first, as when a team submits a sweep or an incident
  brings a batch of urgent jobs.
- `queues`: each job goes to a queue at random by the queues' `share`; a queue's
  `guarantee` and `capability` are in GPUs, `reclaimable` defaults to true.
- `limits`: each job declares a runtime limit, as users do: the runtime it could take
  (its runtime at full speed times `slack`, the slowdown of the widest span, 1.7:
  `phalanx.sim.slowdown`), divided by an accuracy drawn uniformly from `accuracy`
  ([0.1, 1.0]: actual over requested runtime is spread near uniformly over (0, 1] in
  the Parallel Workloads Archive logs, Mu'alem and Feitelson, "Utilization,
  predictability, workloads, and user runtime estimates in scheduling the IBM SP2
  with backfilling", IEEE TPDS 12(6), 2001), then rounded up to a value users pick (15
  minutes, 30 minutes, 1, 2, 4, 8, 12, 24 or 48 hours, then whole days: most requests
  are one of a few round values, Tsafrir, Etsion and Feitelson, "Modeling user
  runtime estimates", JSSPP 2005). `exact: true` declares the runtime times `slack`
  itself; a `noLimitShare` of the jobs declares none.
- `checkpoints`: a `share` of the jobs, picked at random, save their progress every
  `intervalSeconds` (drawn uniformly from the `[low, high]` given), as a training job
  that checkpoints on a timer; an eviction then loses only the work since the last save.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from phalanx.sim.model import JobSpec, SimQueue
from phalanx.sim.workloads.alibaba import NEVER

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
    limits = spec.get("limits")
    if limits:  # drawn apart too
        mixed = [_limit(job, limits, rng) for rng in (random.Random(seed * SALT + 2),)
                 for job in mixed]
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


ROUND_SECONDS = (900, 1800, 3600, 7200, 14400, 28800, 43200, 86400, 172800)
"""Runtime limits users pick (`limits`); above the last, whole days."""


def _limit(job: JobSpec, spec: Mapping[str, Any], rng: random.Random) -> JobSpec:
    """The job with the runtime limit its user declares (`limits`: module docstring)."""
    no_limit = float(spec.get("noLimitShare", 0.0))
    low, high = (float(x) for x in spec.get("accuracy", (0.1, 1.0)))
    accuracy = rng.uniform(low, high)  # drawn for every job: the variants share draws
    if rng.random() < no_limit or job.duration >= NEVER:  # jobs that never end declare none
        return job
    need = job.duration * float(spec.get("slack", 1.7))
    if bool(spec.get("exact", False)):
        return replace(job, runtime_limit_seconds=math.ceil(need))
    return replace(job, runtime_limit_seconds=round_up(need / accuracy))


def round_up(seconds: float) -> int:
    """The first round value at or above `seconds`."""
    for value in ROUND_SECONDS:
        if seconds <= value:
            return value
    return math.ceil(seconds / 86400) * 86400
