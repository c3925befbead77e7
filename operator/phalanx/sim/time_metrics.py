"""Figures of time (#31) of one run: what each cause of lost work cost, how good the
start estimates were, whether reserved starts were kept, and whom waiting hurt.

- `lost_gpu_hours_by_cause`: GPU-hours of work thrown away, by what ended the attempt:
  Preempted, Reclaimed (the core's eviction reasons) or Limit (stopped at its runtime
  limit); reservations evict nothing, so they are never a cause.
- Estimates: the start a job was first told it is expected by (the start of the room
  reserved for it, once it became the first of its queue to wait), against its first
  actual start. `estimate_error`: |actual - expected| as a share of its actual wait
  (from arrival); `reserved_start_kept`: the share of those jobs that started by the
  expected start (Slurm's backfill promise, which holds as long as no gang of higher
  priority arrives and no node is lost), give or take one cycle period: with cycles
  every minute (lingjun-synthetic) a gang whose room frees at its start is placed at the
  next cycle, up to a minute later.
- Waits: of small gangs (at most one node's GPUs) and big ones (the tenth with the
  most GPUs), every wait of a job counted (`JobRun.wait_until`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from phalanx.sim.jobrun import JobRun


def time_figures(
    arrived: Sequence[JobRun], end: float, node_gpus: int, cycle_period: float = 0.0
) -> dict[str, Any]:
    return {
        "lost_gpu_hours_by_cause": _lost_by_cause(arrived),
        **_estimates(arrived, cycle_period),
        **_waits(arrived, end, node_gpus),
    }


def _lost_by_cause(runs: Sequence[JobRun]) -> dict[str, float]:
    causes: dict[str, float] = {}
    for run in runs:
        for cause, seconds in run.lost_by_cause.items():
            causes[cause] = causes.get(cause, 0.0) + seconds / 3600.0
    return dict(sorted(causes.items()))


def _estimates(runs: Sequence[JobRun], cycle_period: float) -> dict[str, Any]:
    told = [r for r in runs if r.expected_start is not None and r.first_start is not None]
    errors = [
        abs(r.first_start - r.expected_start) / max(r.first_start - r.spec.arrival, 1.0)
        for r in told
        if r.first_start is not None and r.expected_start is not None
    ]
    kept = sum(1 for r in told
               if r.first_start is not None and r.expected_start is not None
               and r.first_start <= r.expected_start + cycle_period + 1e-6)  # fmt: skip
    return {
        "estimated_jobs": len(told),
        "estimate_error_p50": float(np.percentile(errors, 50)) if errors else None,
        "estimate_error_p90": float(np.percentile(errors, 90)) if errors else None,
        "reserved_start_kept": kept / len(told) if told else None,
    }


def _waits(runs: Sequence[JobRun], end: float, node_gpus: int) -> dict[str, Any]:
    if not runs:
        return {"small_wait_p95_seconds": None, "big_wait_max_seconds": None}
    sizes = sorted(r.spec.gpus for r in runs)
    big_from = sizes[int(0.9 * (len(sizes) - 1))]
    small = [r.wait_until(end) for r in runs if r.spec.gpus <= node_gpus]
    big = [r.wait_until(end) for r in runs if r.spec.gpus >= big_from and r.spec.gpus > node_gpus]
    return {
        "small_wait_p95_seconds": float(np.percentile(small, 95)) if small else None,
        "big_wait_max_seconds": max(big) if big else None,
        "big_wait_mean_seconds": float(np.mean(big)) if big else None,
    }
