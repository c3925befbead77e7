"""Figures of merit of one run, as plain JSON-ready numbers.

The measured window is [0, end]: up to the last finish when every job
finished, else up to the horizon (so GPUs held by a deadlocked gang count as
idle until the end of the run).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from phalanx.sim.engine import SimResult
from phalanx.sim.jobrun import JobRun
from phalanx.sim.model import Span
from phalanx.sim.time_metrics import time_figures

CDF_PERCENTILES = tuple(range(0, 101, 5))
SERIES_POINTS = 300


def stats(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"count": 0, "mean": None, "p50": None, "p95": None}
    array = np.asarray(values, dtype=float)
    return {
        "count": len(values),
        "mean": float(array.mean()),
        "p50": float(np.percentile(array, 50)),
        "p95": float(np.percentile(array, 95)),
    }


def _share(count: int, total: int) -> float | None:
    return count / total if total else None


def summarise(result: SimResult) -> dict[str, Any]:
    runs = result.runs
    total = result.cluster.total_gpus
    end = result.end
    acc = result.integrals
    arrived = [r for r in runs if r.spec.arrival <= end]
    started = [r for r in arrived if r.first_start is not None]
    finished = [r for r in started if r.finish is not None]
    waiting = [r for r in arrived if r.first_start is None]
    waits = [r.wait_until(end) for r in started]
    jcts = [r.finish - r.spec.arrival for r in finished if r.finish is not None]
    multi = [r for r in started if r.spec.pods > 1]
    in_rack = sum(1 for r in multi if r.span in (Span.NODE, Span.RACK))
    in_block = sum(1 for r in multi if r.span in (Span.NODE, Span.RACK, Span.BLOCK))
    window = total * end if end > 0 else 1.0
    scheduler = [c.scheduler_seconds for c in result.cycles]
    prepare = [c.prepare_seconds for c in result.cycles]
    return {
        "jobs": len(runs),
        "arrived": len(arrived),
        "started": len(started),
        "finished": len(finished),
        "never_started": len(waiting),
        "never_started_holding_gpus": sum(1 for r in waiting if r.placed > 0),
        "end_seconds": end,
        "all_finished": len(finished) == len(runs),
        "makespan_seconds": end,
        "gpu_allocation": acc.allocated / window,
        "gpu_busy": acc.busy / window,
        **_window(result),
        "final_gpu_allocation": (
            result.samples[-1].allocated_gpus / total if result.samples and total else 0.0
        ),
        "held_idle_gpu_hours": acc.held_idle / 3600.0,
        "queueing_delay_seconds": stats(waits),
        "jct_seconds": stats(jcts),
        "jct_cdf_seconds": (
            [float(np.percentile(jcts, p)) for p in CDF_PERCENTILES] if jcts else []
        ),
        **preemption(arrived, end),
        **time_figures(arrived, end, max((n.gpus for n in result.cluster.nodes), default=0),
                       result.config.cycle_period),
        "multi_node_gangs": len(multi),
        "multi_node_in_one_rack": _share(in_rack, len(multi)),
        "multi_node_in_one_block": _share(in_block, len(multi)),
        "mean_slowdown_multi_node": (
            float(np.mean([r.slowdown for r in multi])) if multi else None
        ),
        "fully_free_nodes_mean": acc.fully_free_nodes / end if end > 0 else 0.0,
        "cycles": len(result.cycles),
        "scheduler_seconds_per_cycle": {
            "mean": float(np.mean(scheduler)) if scheduler else None,
            "p50": float(np.percentile(scheduler, 50)) if scheduler else None,
            "p95": float(np.percentile(scheduler, 95)) if scheduler else None,
            "max": float(np.max(scheduler)) if scheduler else None,
        },
        "snapshot_seconds_per_cycle": {
            "mean": float(np.mean(prepare)) if prepare else None,
            "p95": float(np.percentile(prepare, 95)) if prepare else None,
        },
        "series": series(result),
    }


def preemption(arrived: Sequence[JobRun], end: float) -> dict[str, Any]:
    """What evictions cost and whom waiting hurts, from the runs' own records.

    Waits here count every second a job waited (all its waits, and for a job still
    waiting at `end`, its wait so far), so a job that never started is not left out.
    "High priority" is the highest priority of the trace, reported only when the
    trace has more than one; the biggest gangs are the jobs of the largest GPU count.
    With more than one queue, `per_queue` has the same figures for each queue's jobs
    (evictions count against the queue of the job evicted): a queue's guarantee is a
    promise to that queue, which the overall figures can hide.
    """
    priorities = {r.spec.priority for r in arrived}
    high = max(priorities) if len(priorities) > 1 else None
    biggest = max((r.spec.gpus for r in arrived), default=0)
    big_waits = [r.wait_until(end) for r in arrived if r.spec.gpus == biggest]
    queues = sorted({r.spec.queue for r in arrived})
    per_queue = (
        {
            queue: _costs([r for r in arrived if r.spec.queue == queue], end, high)
            for queue in queues
        }
        if len(queues) > 1
        else {}
    )
    return {
        **_costs(arrived, end, high, with_delay=False),
        "biggest_gang_gpus": biggest,
        "biggest_gang_max_wait_seconds": max(big_waits, default=None),
        **({"per_queue": per_queue} if per_queue else {}),
    }


def _costs(
    runs: Sequence[JobRun], end: float, high: int | None, with_delay: bool = True
) -> dict[str, Any]:
    """Evictions, work lost and high-priority waits of `runs` (and, per queue, their
    queueing delay: the overall one is `summarise`'s)."""
    high_waits = [r.wait_until(end) for r in runs if high is not None and r.spec.priority == high]
    costs: dict[str, Any] = {
        "evicted_pods": sum(r.evicted_pods for r in runs),
        "evicted_gpus": sum(r.evicted_gpus for r in runs),
        "job_evictions": sum(r.attempt for r in runs),
        "gpu_hours_lost": sum(r.lost_gpu_seconds for r in runs) / 3600.0,
        "high_priority_wait_seconds": stats(high_waits),
    }
    if with_delay:
        started = [r.wait_until(end) for r in runs if r.first_start is not None]
        costs["queueing_delay_seconds"] = stats(started)
    return costs


def series(result: SimResult) -> dict[str, list[float]]:
    """Downsampled step series for plots (last sample of each time bucket)."""
    samples = result.samples
    total = result.cluster.total_gpus or 1
    if not samples:
        return {"time": [], "allocation": [], "held_idle_gpus": [], "fully_free_nodes": []}
    step = max(1, len(samples) // SERIES_POINTS)
    picked = list(samples[::step])
    if picked[-1] is not samples[-1]:
        picked.append(samples[-1])
    return {
        "time": [s.time for s in picked],
        "allocation": [s.allocated_gpus / total for s in picked],
        "held_idle_gpus": [float(s.held_idle_gpus) for s in picked],
        "fully_free_nodes": [float(s.fully_free_nodes) for s in picked],
    }


def _window(result: SimResult) -> dict[str, float | None]:
    """Utilisation over the steady window only (None when the run ended before it)."""
    if result.window is None:
        return {
            "window_gpu_allocation": None,
            "window_gpu_busy": None,
            "window_fully_free_nodes": None,
        }
    first, last = result.window
    span = (last.until - first.until) * result.cluster.total_gpus
    if span <= 0:
        return {
            "window_gpu_allocation": None,
            "window_gpu_busy": None,
            "window_fully_free_nodes": None,
        }
    return {
        "window_gpu_allocation": (last.allocated - first.allocated) / span,
        "window_gpu_busy": (last.busy - first.busy) / span,
        "window_fully_free_nodes": (last.fully_free_nodes - first.fully_free_nodes)
        / (last.until - first.until),
    }
