"""One simulation from names and files: what the CLI and the benchmarks share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from phalanx.sim.cluster import load_cluster
from phalanx.sim.engine import SimConfig, simulate
from phalanx.sim.metrics import summarise
from phalanx.sim.model import JobSpec, SimCluster, SimQueue
from phalanx.sim.paths import resolve
from phalanx.sim.policies import make_policy
from phalanx.sim.workloads import alibaba

HORIZON_FACTOR = 2.0
"""Default horizon: this many times the last arrival, plus twice the longest job (slowdown)."""


def open_cluster(path: str | Path) -> SimCluster:
    """A cluster description YAML, or an Alibaba node list CSV (the trace's own nodes)."""
    file = Path(path)
    if file.suffix == ".csv":
        return alibaba.openb_cluster(file)
    return load_cluster(resolve(file))


def default_horizon(jobs: Sequence[JobSpec], cycle_period: float) -> float:
    last = max((j.arrival for j in jobs), default=0.0)
    finite = [j.duration for j in jobs if j.duration < alibaba.NEVER]
    if not finite:  # no departures: stop shortly after the last arrival
        return last + max(cycle_period, 1.0) * 2
    return last * HORIZON_FACTOR + 2 * max(finite) + max(cycle_period, 1.0)


def steady_window(jobs: Sequence[JobSpec]) -> tuple[float, float]:
    """From a quarter of the arrival span (ramp-up done) to the last arrival (drain not begun)."""
    last = max((j.arrival for j in jobs), default=0.0)
    return (0.25 * last, last)


def run_policy(
    cluster: SimCluster,
    jobs: Sequence[JobSpec],
    policy: str,
    config: SimConfig,
    queues: Sequence[SimQueue] = (),
) -> dict[str, Any]:
    if config.window is None:
        config = replace(config, window=steady_window(jobs))
    result = simulate(cluster, jobs, make_policy(policy, cluster, queues=queues), config)
    summary = summarise(result)
    summary["policy"] = policy
    summary["cluster"] = cluster.name
    summary["horizon_seconds"] = config.horizon
    summary["cycle_period_seconds"] = config.cycle_period
    summary["slowdown_model"] = "on" if config.slowdown.enabled else "off"
    return summary
