"""Time on a full cluster (#31), in the simulator: backfill against no backfill, with
runtime limits as users declare them (overestimated) and exact.

    python -m bench.sim.backfill [--only W ...] [--jobs 2]    # rewrites bench/results/backfill.json
    python -m bench.sim.backfill --seeds 1 2 ... 12 --output /tmp/backfill-12.json

For each workload of `WORKLOADS` at its highest load, slowdown model on, every seed:
`phalanx` and `phalanx-nobackfill` (the same core, reserved room kept idle for its gang),
each with the trace's jobs declaring runtime limits (`limits` of `phalanx.sim.workloads.mix`:
overestimated, accuracy uniform on [0.1, 1], rounded up to a value users pick; and exact,
the runtime at the widest span). Reported per workload, policy and variant (means over the
seeds): GPU-hours lost to evictions by cause (reservations evict nothing, so they are no
cause), the share of reserved gangs that started by the start they were first given
(`reserved_start_kept`; the promise holds without higher-priority arrivals, so
`priorities` and `priority-queues` may break it by design), the estimate's error (p50, p90,
as a share of the wait), GPU allocation, small-gang wait p95 and the biggest gangs' longest
and mean wait (`phalanx.sim.time_metrics`). The longest is one gang's wait in each run, so
it swings by hours from seed to seed; the mean says how the biggest gangs fare as a whole.
`--seeds` runs other seeds than each workload's own, into another file. The Alibaba trace
is left out: its pods never end, so there is nothing to plan with.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from bench.common import RESULTS, ROOT, Generated, block, page_header, write
from bench.sim.run import Task, run_task

WORKLOADS = ("small-synthetic", "priorities", "priority-queues", "lingjun-synthetic")
POLICIES = ("phalanx", "phalanx-nobackfill")
VARIANTS = {"overestimated": False, "exact": True}
OUTPUT = RESULTS / "backfill.json"
COMMAND = "python -m bench.sim.backfill"
FIGURES = (
    "gpu_allocation", "small_wait_p95_seconds", "big_wait_max_seconds", "big_wait_mean_seconds",
    "reserved_start_kept",
    "estimate_error_p50", "estimate_error_p90", "estimated_jobs", "gpu_hours_lost",
)


def tasks(workload: str, seeds: Sequence[int] = ()) -> list[tuple[str, Task]]:
    """Every run of the workload (its own seeds, or `seeds`)."""
    spec = yaml.safe_load((ROOT / "bench" / "workloads" / f"{workload}.yaml").read_text())
    limits = spec["trace"].get("limits") or {"accuracy": [0.1, 1.0]}
    found = []
    for variant, exact in VARIANTS.items():
        trace = {**spec["trace"], "limits": {**limits, "exact": exact}}
        for seed in seeds or spec["seeds"]:
            for policy in POLICIES:
                task = Task(
                    workload=workload, cluster=spec["cluster"], trace=trace,
                    load=float(spec["loads"][-1]), seed=int(seed), slowdown="on",
                    policy=policy, cycle_period=float(spec.get("cyclePeriodSeconds", 0)),
                    horizon_factor=float(spec.get("horizonFactor", 2.0)), keep_series=False,
                )  # fmt: skip
                found.append((variant, task))
    return found


def _run(item: tuple[str, Task]) -> dict[str, Any]:
    variant, task = item
    summary = run_task(task)
    kept = {key: summary[key] for key in FIGURES}
    kept.update(workload=task.workload, policy=task.policy, seed=task.seed, variant=variant,
                lost_by_cause=summary["lost_gpu_hours_by_cause"])  # fmt: skip
    return kept


def aggregate(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Means over the seeds, per workload, variant and policy (None where no seed has one)."""
    rows = []
    keys = sorted({(r["workload"], r["variant"], r["policy"]) for r in runs},
                  key=lambda k: (WORKLOADS.index(k[0]), list(VARIANTS).index(k[1]),
                                 POLICIES.index(k[2])))  # fmt: skip
    for workload, variant, policy in keys:
        mine = [r for r in runs if (r["workload"], r["variant"], r["policy"]) == (
            workload, variant, policy)]
        row: dict[str, Any] = {"workload": workload, "variant": variant, "policy": policy,
                               "seeds": len(mine)}  # fmt: skip
        for figure in FIGURES:
            values = [r[figure] for r in mine if r[figure] is not None]
            row[figure] = statistics.fmean(values) if values else None
        causes = sorted({c for r in mine for c in r["lost_by_cause"]})
        row["lost_by_cause"] = {c: statistics.fmean(r["lost_by_cause"].get(c, 0.0) for r in mine)
                                for c in causes}  # fmt: skip
        rows.append(row)
    return rows


def _h(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 3600:.2f}"


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.0f}%"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _pair(rows: dict[str, dict[str, Any]], figure: str, show: Any) -> str:
    """"phalanx / phalanx-nobackfill" of one figure."""
    return " / ".join(show(rows[p][figure]) if p in rows else "-" for p in POLICIES)


def render(report: dict[str, Any]) -> str:
    """One row per workload and kind of limits, each cell Phalanx / phalanx-nobackfill."""
    lines = [
        f"Generated by `{COMMAND}` ({report['timestamp']}, {report['simulations']} simulations, "
        f"{report['cores']} cores): means over the seeds at each workload's highest load, "
        "slowdown model on; each cell **phalanx** / phalanx-nobackfill. Estimate error: "
        "|actual - expected start| over the actual wait; lost work by cause in GPU-hours "
        "(reservations evict nothing, so they are never a cause).",
        "",
        "| workload | limits | GPU alloc | small wait p95 (h) | big wait max (h) "
        "| big wait mean (h) | reserved start kept | estimate error p50 | lost GPU-h (phalanx) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    grouped: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for row in report["aggregate"]:
        grouped.setdefault((row["workload"], row["variant"]), {})[row["policy"]] = row
    for (workload, variant), rows in grouped.items():
        ours = rows.get("phalanx", {}).get("lost_by_cause", {})
        causes = ", ".join(f"{c} {v:.1f}" for c, v in ours.items()) or "0"
        lines.append(
            f"| {workload} | {variant} | {_pair(rows, 'gpu_allocation', _pct)} "
            f"| {_pair(rows, 'small_wait_p95_seconds', _h)} "
            f"| {_pair(rows, 'big_wait_max_seconds', _h)} "
            f"| {_pair(rows, 'big_wait_mean_seconds', _h)} "
            f"| {_pair(rows, 'reserved_start_kept', _pct)} "
            f"| {_pair(rows, 'estimate_error_p50', _x)} | {causes} |"
        )
    return "\n".join(lines)


def generated(results: Path = RESULTS) -> Generated:
    path = results / "backfill.json"
    table = render(json.loads(path.read_text())) if path.exists() else "(not run yet)"
    page = [*page_header("Time on a full cluster: results", "bench/results/backfill.json"),
            table, ""]  # fmt: skip
    return Generated("sim-time", COMMAND, {"sim-time": block("sim-time", COMMAND,
                                                              "\n" + table + "\n")},
                     "\n".join(page))  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--only", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--seeds", type=int, nargs="+", default=[],
                        help="these seeds instead of each workload's own (then give --output)")
    args = parser.parse_args(argv)
    if args.seeds and args.output == OUTPUT:
        parser.error("--seeds makes another table than bench/results/backfill.json: give --output")
    items = [item for workload in args.only for item in tasks(workload, args.seeds)]
    started = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        runs = list(pool.map(_run, items))
    report = {
        "command": COMMAND + "".join(f" {a}" for a in (argv or [])),
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "cores": args.jobs,
        "simulations": len(runs),
        "simulation_seconds": round(time.perf_counter() - started, 1),
        "runs": runs,
        "aggregate": aggregate(runs),
    }
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    if args.output == OUTPUT:
        write([generated()])
    print(render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
