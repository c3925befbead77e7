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
until its usage reaches team-a's ("even"), and until it is within 5% of it.

Until even (or the end, in a run that never evens), every gang started is counted: team-b's
share of them and of the GPUs they took (all of the room that freed, since the cluster is
full), and the gangs of team-a started while team-b, whose usage was lower, had a gang
waiting that fits the same room ("team-a ahead"). The bar: with decay team-b is first until
even (team-a ahead 0); without decay it is not.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import RESULTS, ROOT, Generated, block, page_header, write
from phalanx.core.admission.usage import accrue
from phalanx.sim.cluster import load_cluster
from phalanx.sim.engine import SimConfig, simulate
from phalanx.sim.jobrun import JobRun
from phalanx.sim.model import JobSpec, SimCluster, SimQueue
from phalanx.sim.policies.core_policy import CorePolicy
from phalanx.sim.state import ClusterState

COMMAND = "python -m bench.sim.fair_share"
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


@dataclass(slots=True)
class Start:
    """A gang started after team-b's arrival; `ahead`: a team-a gang started while team-b
    had a lower usage and a waiting gang that fits the room this one took."""

    at: float
    team: str
    gpus: float
    ahead: bool


@dataclass
class Recorder:
    """What the engine shows after each batch of events: the GPUs each team holds, each
    team's usage (measured with HALF_LIFE, the core's exact `accrue`), and the starts."""

    held: Series = field(default_factory=list)
    usage: Series = field(default_factory=list)
    starts: list[Start] = field(default_factory=list)
    _kept: dict[str, dict[str, float]] = field(
        default_factory=lambda: {team: {} for team in TEAMS})
    _seen: set[tuple[str, int]] = field(default_factory=set)

    def observe(self, now: float, state: ClusterState, runs: Mapping[str, JobRun]) -> None:
        last, before = self.held[-1] if self.held else (0.0, dict.fromkeys(TEAMS, 0.0))
        self._kept = {t: accrue(self._kept[t], {"gpu": before[t]}, now - last, HALF_LIFE)
                      for t in TEAMS}
        usage = {t: self._kept[t].get("gpu", 0.0) for t in TEAMS}
        held = dict.fromkeys(TEAMS, 0.0)
        started: list[JobRun] = []
        waiting: list[JobSpec] = []
        for run in runs.values():
            if run.start is not None and run.finish is None:
                held[run.spec.queue] += run.held_gpus
                if run.start == now and (run.name, run.attempt) not in self._seen:
                    self._seen.add((run.name, run.attempt))
                    started.append(run)
            elif run.start is None and run.finish is None and run.spec.arrival <= now:
                waiting.append(run.spec)
        self.held.append((now, held))
        self.usage.append((now, usage))
        if now < DAY:
            return
        owed = usage["team-b"] < usage["team-a"]
        for run in started:
            ahead = run.spec.queue == "team-a" and owed and any(
                spec.queue == "team-b" and fits_in(spec, run.spec) for spec in waiting)
            self.starts.append(Start(now, run.spec.queue, run.held_gpus, ahead))


def fits_in(waiting: JobSpec, started: JobSpec) -> bool:
    """Does `waiting`'s gang fit the room `started`'s took? Pods no more, and none larger
    (every gang here is 4 pods x 8 GPUs on whole nodes)."""
    return waiting.pods <= started.pods and waiting.gpus_per_pod <= started.gpus_per_pod


def record(cluster: SimCluster, jobs: Sequence[JobSpec], half_life: float,
           horizon: float) -> Recorder:
    """One run of the core with `half_life`, recorded."""
    recorder = Recorder()
    queues = tuple(SimQueue(name) for name in TEAMS)
    policy = CorePolicy("phalanx", cluster, True, "binpack", queues=queues,
                        usage_half_life_seconds=half_life)
    simulate(cluster, jobs, policy, SimConfig(horizon=horizon), recorder.observe)
    return recorder


def even_at(usage: Series, ratio: float) -> float | None:
    """When, after team-b's arrival, its usage is first at least `ratio` of team-a's."""
    for now, amounts in usage:
        if now >= DAY and amounts["team-b"] >= ratio * amounts["team-a"] > 0:
            return now
    return None


def hours_after_arrival(moment: float | None) -> float | None:
    return None if moment is None else round((moment - DAY) / HOUR, 2)


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


def until_even(starts: Sequence[Start], even: float | None, horizon: float) -> dict[str, Any]:
    """The gangs started from team-b's arrival until even (to the end, if never even)."""
    before = [s for s in starts if even is None or s.at < even]
    b = [s for s in before if s.team == "team-b"]
    gpus = sum(s.gpus for s in before)
    return {
        "hours": round(((horizon if even is None else even) - DAY) / HOUR, 2),
        "gangs_started": len(before),
        "team_b_share_of_gangs": round(len(b) / len(before), 3) if before else None,
        "team_b_share_of_freed_gpus": round(sum(s.gpus for s in b) / gpus, 3) if gpus else None,
        "team_a_ahead": sum(s.ahead for s in before),
    }


def widest_gap_after(usage: Series, even: float | None) -> float | None:
    """Once even, how far apart the usages drift again: the largest |b - a| / max(a, b)."""
    if even is None:
        return None
    gaps = [abs(u["team-b"] - u["team-a"]) / max(u.values()) for now, u in usage if now > even]
    return round(max(gaps, default=0.0), 3)


def measure(recorder: Recorder, half_life: float, horizon: float) -> dict[str, Any]:
    even = even_at(recorder.usage, 1.0)
    return {
        "usage_half_life_seconds": half_life,
        "hours_to_even_usage": hours_after_arrival(even),
        "hours_to_within_5pct": hours_after_arrival(even_at(recorder.usage, 0.95)),
        "until_even": until_even(recorder.starts, even, horizon),
        "widest_gap_after_even": widest_gap_after(recorder.usage, even),
        "team_b_share_first_6h": share_after(recorder.held, 6.0),
        "team_b_share_first_24h": share_after(recorder.held, 24.0),
    }


def run(days: float) -> dict[str, Any]:
    cluster = load_cluster(CLUSTER)
    jobs = trace(cluster, days)
    horizon = DAY * (1 + days)
    results = {label: measure(record(cluster, jobs, half_life, horizon), half_life, horizon)
               for label, half_life in (("with-decay", HALF_LIFE), ("without-decay", 0.0))}
    return {"command": COMMAND, "cluster": str(CLUSTER.relative_to(ROOT)),
            "gpus": sum(node.gpus for node in cluster.nodes), "gang": [PODS, GPUS_PER_POD],
            "measured_half_life_seconds": HALF_LIFE, "days_after_team_b": days,
            "jobs": len(jobs), "results": results}


def render(report: Mapping[str, Any]) -> str:
    """The table: one row per run of the core."""
    lines = ["| order of queues | hours to even usage | to within 5% | counted (h after arrival) "
             "| gangs started | team-b's share of them | of the freed GPUs "
             "| team-a ahead of an owed team-b | widest gap once even |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in report["results"].values():
        until = row["until_even"]
        gap = row["widest_gap_after_even"]
        lines.append(" | ".join([
            f"| {_order(row)}", _hours(row["hours_to_even_usage"]),
            _hours(row["hours_to_within_5pct"]), f"{until['hours']:.2f}",
            str(until["gangs_started"]), _percent(until["team_b_share_of_gangs"]),
            _percent(until["team_b_share_of_freed_gpus"]), str(until["team_a_ahead"]),
            f"{_percent(gap)} |"]))
    return "\n".join(lines)


def _order(row: Mapping[str, Any]) -> str:
    half_life = row["usage_half_life_seconds"]
    if half_life:
        return f"decayed usage + allocation (half-life {half_life / HOUR:g} h)"
    return "DRF on what runs now (half-life 0)"


def _hours(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def page(report: Mapping[str, Any]) -> str:
    days = report["days_after_team_b"]
    pods, gpus = report["gang"]
    measured = report["measured_half_life_seconds"] / HOUR
    return "\n".join([
        f"Generated by `{COMMAND}` (bench/results/fair-share.json): team-a alone on "
        f"`{report['cluster']}` ({report['gpus']} GPUs) for a day, then team-b with the same "
        f"backlog (gangs of {pods} x {gpus} GPUs, 1.5-2.5 h) for {days:g} days; the core run "
        f"once with a {measured:g} h half-life and once without; each team's usage measured "
        f"the same way in both (GPU-seconds decayed with a {measured:g} h half-life).", "",
        "Counted from team-b's arrival until the usages are even (to the end of the run if "
        "they never are): the gangs started, team-b's share of them and of the GPUs they took "
        "(the room that freed: the cluster is full), and the team-a gangs started while "
        "team-b had less usage and a waiting gang that fit the same room. Then how far the "
        "usages drift apart again once even.", "",
        render(report)])


def headline(report: Mapping[str, Any]) -> str:
    """The README's line."""
    decay, plain = report["results"]["with-decay"], report["results"]["without-decay"]
    first, other = decay["until_even"], plain["until_even"]
    never = ("never even" if plain["hours_to_even_usage"] is None
             else f"even after {plain['hours_to_even_usage']:.2f} h")
    return (
        f"**Fair sharing over time** (`{COMMAND}`, "
        "[results](../docs/benchmarks/fair-share-results.md)): team-a has the cluster for a "
        "day, then team-b arrives with the same backlog. With a "
        f"{decay['usage_half_life_seconds'] / HOUR:g} h half-life team-b goes first until "
        f"the usages are even, {_hours(decay['hours_to_even_usage'])} h later: "
        f"{_percent(first['team_b_share_of_freed_gpus'])} of the freed GPUs, team-a started "
        f"ahead of it {first['team_a_ahead']} times. Without decay (DRF on what runs) they are "
        f"{never} in {report['days_after_team_b']:g} days: team-b gets "
        f"{_percent(other['team_b_share_of_freed_gpus'])}, team-a ahead "
        f"{other['team_a_ahead']} times.")


def generated(results: Path = RESULTS) -> Generated:
    path = results / "fair-share.json"
    report = json.loads(path.read_text()) if path.exists() else None
    line = headline(report) if report else "(not run yet)"
    body = [*page_header("Fair sharing over time: results", "bench/results/fair-share.json"),
            page(report) if report else line, ""]
    return Generated("fair-share", COMMAND,
                     {"fair-share": block("fair-share", COMMAND, "\n" + line)},
                     "\n".join(body))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sim.fair_share",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="half a day with team-b")
    args = parser.parse_args(argv)
    report = run(0.5 if args.smoke else 2.0)
    folder = Path(tempfile.mkdtemp()) if args.smoke else RESULTS
    path = folder / "fair-share.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    if not args.smoke:
        write([generated()])
    json.dump(report["results"], sys.stdout, indent=2)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
