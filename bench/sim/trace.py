"""Why high-priority jobs waited, and which evictions were wasted, in one simulation.

    python -m bench.sim.trace --workload priority-queues --seed 2 [--load 1.1] [--policy phalanx]

Runs one simulation of a workload of bench/workloads/ under a gang policy (the core) and
reads every cycle's `CycleResult`:
- evictions by reason, the GPU-hours of work each reason lost, and those whose
  preemptor did not start at that instant although its victims were gone at once
  (wasted), unless a group of its queue and of higher priority, which may take the room,
  started then;
- the waiting time of the highest-priority jobs, by what their decision said while they
  waited: their queue at its guarantee (reclaim may not help) and only work of priority
  at or above theirs in their queue's way, or anything else. Time a job spent running, or
  in the restart delay after an eviction, is in neither (it gets no decision then);
- each of the biggest gangs: when it arrived, first held a reservation (`Reserved`),
  and first started.

    python -m bench.sim.trace --workload priority-queues --seed 4 --waits phalanx kueue-like

With `--waits`, each named policy (any of the simulator's) runs the same jobs instead, and
per queue the waits of its highest-priority jobs are printed: how many, the mean, the p95
(as in bench/README's tables), how many waited over half an hour, the longest waits with
their jobs' GPUs, and the GPU-hours those jobs waited (each wait times the job's GPUs). A
p95 over a queue's ~40 top-priority jobs is about its fourth-longest wait: it tells a policy
that keeps one 128-GPU gang waiting for hours from one that keeps four small gangs waiting
for two; the GPU-hours tell them apart.
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import yaml

from bench.common import ROOT
from phalanx.core.cycle import run_cycle
from phalanx.core.model.nomination import RESERVED
from phalanx.core.model.result import CycleResult
from phalanx.sim.engine import SimConfig, simulate
from phalanx.sim.jobrun import JobRun
from phalanx.sim.metrics import stats
from phalanx.sim.model import JobSpec, SimCluster
from phalanx.sim.policies import CORE_POLICIES, POLICIES, make_policy
from phalanx.sim.policies.core_policy import CorePolicy
from phalanx.sim.policy import CycleOutcome, SchedulingView
from phalanx.sim.run import open_cluster, steady_window
from phalanx.sim.slowdown import SlowdownModel
from phalanx.sim.state import ClusterState
from phalanx.sim.trace import jobs_from_spec
from phalanx.sim.workloads.mix import queues_from_spec

AT_GUARANTEE = "queue at its guarantee, only work of equal or higher priority in its queue's way"
OTHER = "other reasons"


class Recorder:
    """A core policy whose cycles are kept: evictions, and the highest priority's waits."""

    def __init__(self, policy: CorePolicy, top: int) -> None:
        self.policy = policy
        self.name = policy.name
        self.top = top
        self.evictions: list[tuple[float, str, str, tuple[str, ...]]] = []
        self.waits: dict[str, list[tuple[float, str | None]]] = defaultdict(list)
        self.reserved: dict[str, float] = {}
        """When each job first held a starvation reservation."""

    def schedule(self, view: SchedulingView) -> CycleOutcome:
        snapshot, pod_job = self.policy.snapshot(view)
        result = run_cycle(snapshot, self.policy.config, now=view.now)
        self._keep(view.now, result)
        placements, evictions = self.policy.carry_out(result, pod_job)
        return CycleOutcome(placements, scheduler_seconds=0.0, evictions=evictions)

    def _keep(self, now: float, result: CycleResult) -> None:
        victims: dict[tuple[str, str], set[str]] = defaultdict(set)
        for eviction in result.evictions:
            victim = _job(eviction.group) if eviction.group else str(eviction.pod)
            reason = str(eviction.reason)
            victims[(_job(eviction.preemptor), reason)].add(victim)
        for (preemptor, reason), jobs in victims.items():
            self.evictions.append((now, preemptor, reason, tuple(sorted(jobs))))
        for decision in result.groups:
            held = decision.nomination
            if held is not None and held.reason == RESERVED:
                self.reserved.setdefault(_job(decision.group), now)
            if decision.priority == self.top:
                cause = None if decision.scheduled else _cause(decision.message)
                self.waits[_job(decision.group)].append((now, cause))


def _job(group: str) -> str:
    return group.split("/", 1)[1]


def _cause(message: str) -> str:
    blocked = "is at its guarantee" in message and "of priority >=" in message
    return AT_GUARANTEE if blocked else OTHER


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sim.trace", description=__doc__)
    parser.add_argument("--workload", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--load", type=float, default=None)
    parser.add_argument("--policy", default="phalanx", choices=tuple(CORE_POLICIES))
    parser.add_argument("--waits", nargs="+", choices=POLICIES, default=None,
                        help="per queue, the top-priority jobs' waits under these policies")
    args = parser.parse_args(argv)
    spec = yaml.safe_load((ROOT / "bench" / "workloads" / f"{args.workload}.yaml").read_text())
    load = args.load if args.load is not None else float(spec["loads"][0])
    cluster = open_cluster(str(ROOT / spec["cluster"]))
    jobs = jobs_from_spec(spec["trace"], cluster, seed=args.seed, load=load)
    if args.waits:
        for policy in args.waits:
            print_waits(policy, cluster, jobs, spec)
        return 0
    topology_aware, order = CORE_POLICIES[args.policy]
    queues = queues_from_spec(spec["trace"])
    core = CorePolicy(args.policy, cluster, topology_aware, order, queues=queues)
    core.config = replace(core.config, explain_preemption=True)  # the messages are read
    top = max(j.priority for j in jobs)
    recorder = Recorder(core, top)
    last = max(j.arrival for j in jobs)
    horizon = last * float(spec.get("horizonFactor", 2.0)) + 1.0
    config = SimConfig(horizon=horizon, slowdown=SlowdownModel(), window=steady_window(jobs))
    started: set[tuple[float, str]] = set()
    lost: dict[str, float] = {}
    losses: list[tuple[float, str, float]] = []

    def observe(now: float, state: ClusterState, runs: dict[str, JobRun]) -> None:
        started.update((now, name) for name, run in runs.items() if run.start == now)
        for name, run in runs.items():
            if run.lost_gpu_seconds != lost.get(name, 0.0):
                losses.append((now, name, run.lost_gpu_seconds - lost.get(name, 0.0)))
                lost[name] = run.lost_gpu_seconds

    result = simulate(cluster, jobs, recorder, config, observe)
    report(recorder, {j.name: j for j in jobs}, started, result.end)
    print("GPU-h of work lost by reason:", _lost_by_reason(recorder, losses))
    return 0


def _lost_by_reason(
    recorder: Recorder, losses: Sequence[tuple[float, str, float]]
) -> dict[str, float]:
    """Each loss (a victim's work, counted by the engine when it is evicted) under the
    reason of the latest eviction of that job recorded at or before that instant."""
    by_reason: Counter[str] = Counter()
    for when, job, seconds in losses:
        reason = max(
            (
                (at, why)
                for at, _, why, victims in recorder.evictions
                if job in victims and at <= when
            ),
            default=(0.0, "unmatched"),
        )[1]
        by_reason[reason] += seconds / 3600
    return {reason: round(hours, 1) for reason, hours in sorted(by_reason.items())}


def report(
    recorder: Recorder, specs: dict[str, JobSpec], started: set[tuple[float, str]], end: float
) -> None:
    reasons = Counter(reason for _, _, reason, _ in recorder.evictions)
    victims = Counter(
        (reason, specs[v].priority) for _, _, reason, jobs in recorder.evictions for v in jobs
    )
    wasted = [
        (when, preemptor)
        for when, preemptor, _, _ in recorder.evictions
        if (when, preemptor) not in started and not _outranked(specs, started, when, preemptor)
    ]
    print(f"eviction events (one preemptor, one cycle): {dict(reasons)}")
    print("victim jobs by (reason, victim priority):", dict(sorted(victims.items())))
    print(f"wasted (the preemptor did not start when its victims left): {len(wasted)}")
    waited: Counter[str] = Counter()
    for records in recorder.waits.values():
        for (when, cause), (after, _) in zip(records, [*records[1:], (end, None)], strict=True):
            if cause is not None:
                waited[cause] += after - when
    top = recorder.top
    print(f"waiting of priority-{top} jobs, by what their decision said (hours):")
    for cause in (AT_GUARANTEE, OTHER):
        print(f"  {waited[cause] / 3600:8.2f}  {cause}")
    biggest = max(spec.gpus for spec in specs.values())
    print(f"the biggest gangs ({biggest} GPUs), in hours: arrival, first reserved, first start")
    for name, spec in sorted(specs.items(), key=lambda item: item[1].arrival):
        if spec.gpus == biggest:
            reserved = recorder.reserved.get(name)
            start = min((when for when, job in started if job == name), default=None)
            print(
                f"  {name}: {spec.arrival / 3600:6.2f}  {_hours(reserved)}  "
                f"{_hours(start) if start is not None else f'not by the end ({end / 3600:.2f})'}"
            )


def print_waits(
    policy: str, cluster: SimCluster, jobs: Sequence[JobSpec], spec: dict[str, Any]
) -> None:
    """The top-priority jobs' waits per queue under `policy` (see the module's docstring)."""
    last = max(j.arrival for j in jobs)
    horizon = last * float(spec.get("horizonFactor", 2.0)) + 1.0
    config = SimConfig(horizon=horizon, slowdown=SlowdownModel(), window=steady_window(jobs))
    made = make_policy(policy, cluster, queues=queues_from_spec(spec["trace"]))
    result = simulate(cluster, jobs, made, config)
    top = max(j.priority for j in jobs)
    for queue in sorted({j.queue for j in jobs}):
        runs = [r for r in result.runs if r.spec.priority == top and r.spec.queue == queue]
        waits = sorted(((r.wait_until(result.end), r.spec.gpus) for r in runs), reverse=True)
        if not waits:
            continue
        p95 = stats([w for w, _ in waits])["p95"] or 0.0
        longest = ", ".join(f"{w / 3600:.2f} h ({g} GPUs)" for w, g in waits[:5])
        print(
            f"{policy}, {queue}: {len(waits)} priority-{top} jobs, mean wait "
            f"{sum(w for w, _ in waits) / len(waits) / 3600:.2f} h, p95 {p95 / 3600:.2f} h, "
            f"{sum(1 for w, _ in waits if w > 1800)} over 0.5 h; longest {longest}; "
            f"GPU-h waited {sum(w * g for w, g in waits) / 3600:.0f}"
        )


def _hours(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 3600:6.2f}"


def _outranked(
    specs: dict[str, JobSpec], started: set[tuple[float, str]], when: float, preemptor: str
) -> bool:
    spec = specs[preemptor]
    return any(
        (when, other.name) in started
        and other.queue == spec.queue
        and other.priority > spec.priority
        for other in specs.values()
    )


if __name__ == "__main__":
    raise SystemExit(main())
