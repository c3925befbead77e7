"""The FGD paper's packing benchmark (allocation at 130% arrived GPU demand).

    python -m bench.packing                     # every trace and policy, seeds 1-10; rewrites
                                                # bench/results/packing.json, its table in
                                                # bench/README.md and the full tables in
                                                # docs/benchmarks/packing-results.md
    python -m bench.packing --traces default --policies bestfit --seeds 1 2 3 --no-readme
    python -m bench.packing --policies phalanx --add   # redo one policy, keep the others' runs
    python -m bench.packing --report-only              # the tables from the JSON again

Each (trace, seed) is one arrival sequence (`phalanx.sim.packing.arrivals`) that every
policy sees; each (trace, seed, policy) is one run, spread over `--jobs` processes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import common
from bench.packing.report import generated, readme_section

if TYPE_CHECKING:
    from phalanx.sim.packing import PackNode, PackPod

DATA = common.BENCH / "data" / "alibaba-gpu-v2023"
NODES = DATA / "openb_node_list_gpu_node.csv"
RESULTS = common.RESULTS / "packing.json"
TRACES = ("default", "multigpu50", "gpushare100")
WHOLE = "-whole"
"""Suffix of a trace with its fractional pods removed."""
POLICY_ORDER = ("phalanx", "fgd", "bestfit", "gang-binpack")
"""The default policies (`gpu-packing`, the paper's GPU Packing baseline, on request)."""


def all_traces() -> list[str]:
    return [*TRACES, *(t + WHOLE for t in TRACES if t != "gpushare100")]


def available_policies() -> list[str]:
    from phalanx.sim.packing.policies import POLICIES

    return [p for p in POLICY_ORDER if p in POLICIES]


def trace_arrivals(
    trace: str, seed: int, nodes: Sequence[PackNode]
) -> tuple[list[PackPod], list[PackPod]]:
    """The trace's pods (`-whole`: without its fractional ones) and one seed's arrivals of
    them, until they ask for 130% of the nodes' GPUs: the table, `bench.packing.losses`
    and `bench.packing.headroom` judge the same arrivals."""
    from phalanx.sim.packing import arrivals, read_trace, whole_gpu_only

    pods = read_trace(DATA / f"openb_pod_list_{trace.removesuffix(WHOLE)}.csv")
    if trace.endswith(WHOLE):
        pods = whole_gpu_only(pods)
    return pods, arrivals(pods, sum(n.gpus for n in nodes) * 1000, seed)


def run_one(task: tuple[str, str, int, bool]) -> dict[str, Any]:
    from phalanx.sim.packing import read_nodes, run_packing
    from phalanx.sim.packing.policies import POLICIES

    trace, policy, seed, random_ties = task
    nodes = read_nodes(NODES)
    pods, sequence = trace_arrivals(trace, seed, nodes)
    result = run_packing(POLICIES[policy](pods), nodes, sequence, seed, random_ties)
    return {
        "trace": trace,
        "policy": policy,
        "seed": seed,
        "ties": "random" if random_ties else "order",
        "pods": result.pods,
        "placed": result.placed,
        "allocation_at_130": result.allocation_at_demand(130),
        "final_allocation": round(result.allocation, 3),
        "arrived_percent": round(100 * result.arrived_gpu_milli / result.total_gpu_milli, 3),
        "fully_free_8gpu_nodes": result.fully_free_8gpu_nodes,
        "stranded_gpus": result.stranded_gpu_milli / 1000,
        "failed_by_kind": result.failed_by_kind,
        "ms_per_pod": round(1000 * result.choose_seconds / max(result.pods, 1), 3),
        "seconds": round(result.seconds, 2),
    }


def aggregate(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Mean, sample standard deviation and every seed's value, per (trace, policy)."""
    keys = sorted({(r["trace"], r["policy"]) for r in runs})
    rows = []
    for trace, policy in keys:
        group = sorted((r for r in runs if (r["trace"], r["policy"]) == (trace, policy)),
                       key=lambda r: r["seed"])
        row: dict[str, Any] = {"trace": trace, "policy": policy,
                               "seeds": [r["seed"] for r in group]}
        for metric in ("allocation_at_130", "fully_free_8gpu_nodes", "stranded_gpus",
                       "ms_per_pod"):
            values = [float(r[metric]) for r in group]
            row[metric] = {
                "mean": statistics.fmean(values),
                "std": statistics.stdev(values) if len(values) > 1 else 0.0,
                "values": values,
            }
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", nargs="+", default=all_traces())
    parser.add_argument("--policies", nargs="+", default=None)
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(1, 11)))
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--add", action="store_true",
                        help="keep the runs already in --output that this command does not redo")
    parser.add_argument("--ties", choices=("order", "random"), default="order",
                        help="order: a seeded node order breaks ties (the paper's simulator); "
                        "random: a draw per pod (kube-scheduler's own selectHost)")
    parser.add_argument("--no-readme", action="store_true")
    parser.add_argument("--report-only", action="store_true",
                        help="only rewrite the tables from --output (printed unless it is "
                        "bench/results/packing.json, the tables' source)")
    args = parser.parse_args(argv)
    if args.report_only:
        _write_tables(args.output)
        return 0
    policies = args.policies or available_policies()
    ties = args.ties == "random"
    tasks = [(t, p, s, ties) for t in args.traces for s in args.seeds for p in policies]
    started = time.time()
    runs: list[dict[str, Any]] = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for run in pool.map(run_one, tasks):
            print(f"{run['trace']:>18} {run['policy']:>12} seed {run['seed']:>2}: "
                  f"{run['allocation_at_130']:6.2f}% at 130%, {run['fully_free_8gpu_nodes']} "
                  f"free 8-GPU nodes, {run['seconds']} s", flush=True)
            runs.append(run)
    if args.add and args.output.exists():
        redone = {(r["trace"], r["policy"], r["seed"]) for r in runs}
        old = json.loads(args.output.read_text())["runs"]
        runs = [r for r in old if (r["trace"], r["policy"], r["seed"]) not in redone] + runs
    report = {
        "command": " ".join(["python -m bench.packing", *argv]),
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "minutes": round((time.time() - started) / 60, 1),
        "python": platform.python_version(),
        "load_average": list(os.getloadavg()),
        "runs": runs,
        "aggregate": aggregate(runs),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1) + "\n")
    if not args.no_readme:
        _write_tables(args.output)
    return 0


def _write_tables(output: Path) -> None:
    """The README block and docs/benchmarks/packing-results.md when `output` is their source;
    another results file's tables are printed."""
    if output.resolve() == RESULTS:
        common.write([generated()])
    else:
        print(readme_section(json.loads(output.read_text())))


if __name__ == "__main__":
    raise SystemExit(main())
