"""`phalanx sim`: replay a trace on a simulated cluster and write the figures of merit.

Example::

    phalanx sim --cluster examples/clusters/small.yaml \
        --trace bench/workloads/small-synthetic.yaml --policy all --out /tmp/sim

writes one `<policy>.json` per policy into the output folder (and prints a table).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", required=True, help="cluster description YAML (or node CSV)")
    parser.add_argument("--trace", required=True, help="trace: jobs YAML, generator YAML or CSV")
    parser.add_argument(
        "--policy",
        default="phalanx",
        help="phalanx, kube-default, gang-spread, gang-binpack, or all",
    )
    parser.add_argument("--out", required=True, help="output folder for the JSON results")
    parser.add_argument("--seed", type=int, default=1, help="seed of generated traces")
    parser.add_argument("--load", type=float, default=None, help="offered load (synthetic)")
    parser.add_argument("--horizon", type=float, default=None, help="virtual seconds to stop at")
    parser.add_argument(
        "--cycle-period",
        type=float,
        default=0.0,
        help="virtual seconds between cycles (0: a cycle after every event batch)",
    )
    parser.add_argument(
        "--slowdown", choices=("on", "off"), default="on", help="topology slowdown model"
    )


def run(args: argparse.Namespace) -> int:
    from phalanx.sim.engine import SimConfig
    from phalanx.sim.policies import POLICIES
    from phalanx.sim.run import default_horizon, open_cluster, run_policy
    from phalanx.sim.slowdown import SlowdownModel
    from phalanx.sim.trace import TraceError, load_jobs, read_trace_spec
    from phalanx.sim.workloads.mix import queues_from_spec

    policies = list(POLICIES) if args.policy == "all" else [args.policy]
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        print(f"unknown policy {unknown[0]!r}; one of {', '.join(POLICIES)}, all", file=sys.stderr)
        return 2
    try:
        cluster = open_cluster(args.cluster)
        jobs = load_jobs(args.trace, cluster, seed=args.seed, load=args.load)
        queues = queues_from_spec(read_trace_spec(args.trace))
    except (OSError, ValueError, TraceError) as error:
        print(f"phalanx sim: {error}", file=sys.stderr)
        return 2
    horizon = args.horizon or default_horizon(jobs, args.cycle_period)
    model = SlowdownModel() if args.slowdown == "on" else SlowdownModel.off()
    config = SimConfig(horizon=horizon, cycle_period=args.cycle_period, slowdown=model)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(
        f"{cluster.name}: {len(cluster.nodes)} nodes, {cluster.total_gpus} GPUs; "
        f"{len(jobs)} jobs; horizon {horizon:.0f}s"
    )
    print(
        f"{'policy':14} {'alloc':>6} {'wait p50':>9} {'JCT p50':>9} {'unstarted':>9} "
        f"{'in rack':>8} {'evicted GPUs':>12} {'GPU-h lost':>10}"
    )
    for name in policies:
        summary = run_policy(cluster, jobs, name, config, queues)
        summary["seed"] = args.seed
        summary["trace"] = str(args.trace)
        (out / f"{name}.json").write_text(json.dumps(summary, indent=1) + "\n")
        rack = summary["multi_node_in_one_rack"]
        print(
            f"{name:14} {summary['gpu_allocation']:6.1%} "
            f"{_num(summary['queueing_delay_seconds']['p50']):>9} "
            f"{_num(summary['jct_seconds']['p50']):>9} {summary['never_started']:>9} "
            f"{'-' if rack is None else f'{rack:.0%}':>8} {summary['evicted_gpus']:>12} "
            f"{summary['gpu_hours_lost']:>10.1f}"
        )
    return 0


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}s"
