"""Fair sharing over time in the simulator (issue #32 item 4): team-a has the cluster to
itself for a day, then team-b arrives with the same demand.

    python -m bench.sim.fair_share            # writes bench/results/fair-share.json
    python -m bench.sim.fair_share --smoke    # a short version, into a temporary folder

Both teams keep the whole example cluster (32 nodes x 8 GPUs) busy: team-a submits its
backlog at 0, team-b the same backlog a day later; gangs of 4 pods x 8 GPUs, 1.5-2.5 h,
one priority, no guarantees (so nothing is reclaimed: only the order of the queues
differs). The core runs twice: with history (usage half-life 6 h: `usage.py`) and
without (half-life 0, DRF on what runs now, today's default). Each team's usage is then
measured the same way in both runs (GPU-seconds decayed with the 6 h half-life, from
the GPUs each team held over time), and the result is the time from team-b's arrival
until its usage reaches team-a's ("even shares"), and until it is within 5% of it.
The order adds a queue's current share to its history (as a share), so team-b is not
given everything: it gets about (1 + the gap in history) / 2 of the GPUs, and the gap
closes about twice as fast as without history (e^-2t/tau against e^-t/tau), without
ever closing exactly: within 5% in about 23 h against 32 h (bench/results/fair-share.json).

Not a bench/workloads/ file: the trace generators draw arrivals from one process, and
"one team alone for a day, then another" is no mix of theirs. The results file is not
named sim-*.json, which `python -m bench.sim` reads as its own.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.common import RESULTS, ROOT
from phalanx.core.admission.usage import accrue
from phalanx.sim.cluster import load_cluster
from phalanx.sim.engine import SimConfig, simulate
from phalanx.sim.jobrun import JobRun
from phalanx.sim.model import JobSpec, SimCluster, SimQueue
from phalanx.sim.policies.core_policy import CorePolicy
from phalanx.sim.state import ClusterState

CLUSTER = ROOT / "examples/clusters/small.yaml"
DAY = 86400.0
HOUR = 3600.0
HALF_LIFE = 6 * HOUR
TEAMS = ("team-a", "team-b")
PODS, GPUS_PER_POD = 4, 8
Series = list[tuple[float, dict[str, float]]]  # (time, team -> GPUs held from then on)


def backlog(team: str, arrival: float, jobs: int, seed: int) -> list[JobSpec]:
    """`jobs` gangs submitted at once, 1.5-2.5 h each (drawn, so they do not all end
    together)."""
    rng = random.Random(seed)
    return [
        JobSpec(name=f"{team}-{i:04d}", arrival=arrival, duration=rng.uniform(1.5, 2.5) * HOUR,
                pods=PODS, gpus_per_pod=GPUS_PER_POD, queue=team)
        for i in range(jobs)
    ]


def trace(cluster: SimCluster, days: float) -> list[JobSpec]:
    """Enough work for each team to fill the cluster until the end: a day alone for
    team-a, then `days` with team-b."""
    gpus = sum(node.gpus for node in cluster.nodes)
    per_day = int(gpus / (PODS * GPUS_PER_POD) * 24 / 1.5) + 1  # the shortest jobs
    return [*backlog("team-a", 0.0, int(per_day * (1 + days)), seed=1),
            *backlog("team-b", DAY, int(per_day * days), seed=2)]


def held_series(cluster: SimCluster, jobs: Sequence[JobSpec], half_life: float,
                horizon: float) -> Series:
    """GPUs each team held over time, under the core with `half_life`."""
    series: Series = []

    def observe(now: float, state: ClusterState, runs: Mapping[str, JobRun]) -> None:
        held = dict.fromkeys(TEAMS, 0.0)
        for run in runs.values():
            if run.start is not None and run.finish is None:
                held[run.spec.queue] = held.get(run.spec.queue, 0.0) + run.held_gpus
        series.append((now, held))

    queues = tuple(SimQueue(name) for name in TEAMS)
    policy = CorePolicy("phalanx", cluster, True, "binpack", queues=queues,
                        usage_half_life_seconds=half_life)
    simulate(cluster, jobs, policy, SimConfig(horizon=horizon), observe)
    return series


def usage_series(series: Series, half_life: float) -> list[tuple[float, dict[str, float]]]:
    """Each team's decayed usage (GPU-seconds) at each point of `series`: what it held
    from one point to the next, integrated exactly (the core's `accrue`)."""
    usage: dict[str, dict[str, float]] = {team: {} for team in TEAMS}
    out: list[tuple[float, dict[str, float]]] = []
    last, held = 0.0, dict.fromkeys(TEAMS, 0.0)
    for now, now_held in series:
        usage = {t: accrue(usage[t], {"gpu": held[t]}, now - last, half_life) for t in TEAMS}
        out.append((now, {t: usage[t].get("gpu", 0.0) for t in TEAMS}))
        last, held = now, now_held
    return out


def hours_until(usage: Sequence[tuple[float, dict[str, float]]], ratio: float) -> float | None:
    """Hours from team-b's arrival until its usage is at least `ratio` of team-a's."""
    for now, amounts in usage:
        if now >= DAY and amounts["team-b"] >= ratio * amounts["team-a"] > 0:
            return round((now - DAY) / HOUR, 2)
    return None


def share_after(series: Series, hours: float) -> float:
    """Team-b's share of the GPUs held, averaged over `hours` after its arrival."""
    held = dict.fromkeys(TEAMS, 0.0)
    last, now_held = DAY, dict.fromkeys(TEAMS, 0.0)
    for now, amounts in series:
        if now <= DAY:
            now_held = amounts
            continue
        end = min(now, DAY + hours * HOUR)
        for team in TEAMS:
            held[team] += now_held[team] * max(0.0, end - last)
        last, now_held = max(last, end), amounts
    total = sum(held.values())
    return round(held["team-b"] / total, 3) if total else 0.0


def run(days: float) -> dict[str, Any]:
    cluster = load_cluster(CLUSTER)
    jobs = trace(cluster, days)
    horizon = DAY * (1 + days)
    results: dict[str, Any] = {}
    for label, half_life in (("with-decay", HALF_LIFE), ("without-decay", 0.0)):
        series = held_series(cluster, jobs, half_life, horizon)
        usage = usage_series(series, HALF_LIFE)
        results[label] = {
            "usage_half_life_seconds": half_life,
            "hours_to_even_usage": hours_until(usage, 1.0),
            "hours_to_within_5pct": hours_until(usage, 0.95),
            "team_b_share_first_6h": share_after(series, 6.0),
            "team_b_share_first_24h": share_after(series, 24.0),
        }
    return {"cluster": str(CLUSTER.relative_to(ROOT)), "measured_half_life_seconds": HALF_LIFE,
            "days_after_team_b": days, "jobs": len(jobs), "results": results}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sim.fair_share",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="half a day with team-b")
    args = parser.parse_args(argv)
    report = run(0.5 if args.smoke else 2.0)
    folder = Path(tempfile.mkdtemp()) if args.smoke else RESULTS
    path = folder / "fair-share.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    json.dump(report["results"], sys.stdout, indent=2)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
