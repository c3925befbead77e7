"""Simulator benchmarks: every workload of bench/workloads/ under every policy.

    python -m bench.sim            # all workloads; rewrites bench/results/sim-*.json,
                                   # bench/plots/sim-*.png, the table in bench/README.md
                                   # and docs/benchmarks/sim-results.md
    python -m bench.sim --smoke    # tiny version for CI, written to a temporary folder
    python -m bench.sim --only small-synthetic --jobs 1
    python -m bench.sim --readme-only   # the tables and plots again from bench/results

Each workload file names a cluster, a trace generator, offered loads and seeds;
every (load, seed, slowdown model on/off, policy) is one simulation. Runs are
spread over `--jobs` processes; each run is deterministic, only the measured
scheduler wall-clock varies.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench import common
from bench.common import PLOTS, RESULTS, ROOT, WORKLOADS, Generated

COMMAND = "python -m bench.sim"
BEGIN, END = common.markers("sim", COMMAND)
PAGE = "docs/benchmarks/sim-results.md"
POLICY_ORDER = (
    "phalanx", "kube-default", "kueue-like", "gang-spread", "gang-binpack", "phalanx-nobackfill",
    "phalanx-by-size", "phalanx-evict-always",
)
DEFAULT_POLICIES = POLICY_ORDER[:-3]
"""What a workload runs unless it names its policies (`phalanx-by-size` only matters
where jobs checkpoint: bench/workloads/checkpoints.yaml names it; `phalanx-nobackfill`
is compared by `python -m bench.sim.backfill`; `phalanx-evict-always`, without the
preemption loss factor, where priorities preempt: priorities.yaml and
priority-queues.yaml name it)."""
COLORS = {
    "phalanx": "#d62728",
    "kube-default": "#7f7f7f",
    "kueue-like": "#9467bd",
    "gang-spread": "#1f77b4",
    "gang-binpack": "#2ca02c",
    "phalanx-nobackfill": "#8c564b",
    "phalanx-by-size": "#ff9896",
    "phalanx-evict-always": "#e377c2",
}


@dataclass(frozen=True)
class Task:
    workload: str
    cluster: str
    trace: Mapping[str, Any]
    load: float
    seed: int
    slowdown: str
    policy: str
    cycle_period: float
    horizon_factor: float
    keep_series: bool


def read_workloads(smoke: bool, only: Sequence[str]) -> list[dict[str, Any]]:
    workloads = []
    for file in sorted(WORKLOADS.glob("*.yaml")):
        data = yaml.safe_load(file.read_text())
        if "trace" not in data or "loads" not in data:
            continue  # not a simulator workload (e.g. the end-to-end benchmark's)
        if only and data["name"] not in only:
            continue
        if smoke:
            if "smoke" not in data:
                continue
            override = data["smoke"]
            data = {**data, **{k: v for k, v in override.items() if k != "trace"}}
            data["trace"] = {**data["trace"], **override.get("trace", {})}
        workloads.append(data)
    return workloads


def tasks_of(workload: Mapping[str, Any]) -> list[Task]:
    policies = workload.get("policies", list(DEFAULT_POLICIES))
    models = workload.get("slowdown", ["on", "off"])
    models = ["on" if m is True else "off" if m is False else str(m) for m in models]
    loads = workload["loads"]
    keep_load = loads[len(loads) // 2]
    return [
        Task(
            workload=workload["name"],
            cluster=workload["cluster"],
            trace=workload["trace"],
            load=float(load),
            seed=int(seed),
            slowdown=model,
            policy=policy,
            cycle_period=float(workload.get("cyclePeriodSeconds", 0)),
            horizon_factor=float(workload.get("horizonFactor", 2.0)),
            keep_series=(model == "on" and seed == workload["seeds"][0] and load == keep_load),
        )
        for load in loads
        for seed in workload["seeds"]
        for model in models
        for policy in policies
    ]


def run_task(task: Task) -> dict[str, Any]:
    from phalanx.sim.engine import SimConfig
    from phalanx.sim.run import open_cluster, run_policy
    from phalanx.sim.slowdown import SlowdownModel
    from phalanx.sim.trace import jobs_from_spec
    from phalanx.sim.workloads.alibaba import NEVER
    from phalanx.sim.workloads.mix import queues_from_spec

    started = time.perf_counter()
    cluster = _cluster(task.cluster, open_cluster)
    jobs = jobs_from_spec(task.trace, cluster, seed=task.seed, load=task.load)
    last = max(j.arrival for j in jobs)
    departures = any(j.duration < NEVER for j in jobs)
    period = max(task.cycle_period, 1.0)
    horizon = last * task.horizon_factor + period if departures else last + 2 * period
    model = SlowdownModel() if task.slowdown == "on" else SlowdownModel.off()
    config = SimConfig(horizon=horizon, cycle_period=task.cycle_period, slowdown=model)
    summary = run_policy(cluster, jobs, task.policy, config, queues_from_spec(task.trace))
    if not task.keep_series:
        summary.pop("series")
    summary.update(
        workload=task.workload,
        load=task.load,
        seed=task.seed,
        nodes=len(cluster.nodes),
        gpus=cluster.total_gpus,
        run_wall_seconds=time.perf_counter() - started,
    )
    return summary


_CLUSTERS: dict[str, Any] = {}


def _cluster(path: str, opener: Callable[[str], Any]) -> Any:
    if path not in _CLUSTERS:
        _CLUSTERS[path] = opener(str(ROOT / path))
    return _CLUSTERS[path]


# ---- aggregation -------------------------------------------------------------------------

METRICS: dict[str, Callable[[Mapping[str, Any]], float | None]] = {
    "gpu_allocation": lambda s: s["gpu_allocation"],
    "gpu_busy": lambda s: s["gpu_busy"],
    "final_gpu_allocation": lambda s: s["final_gpu_allocation"],
    "window_gpu_allocation": lambda s: s["window_gpu_allocation"],
    "window_gpu_busy": lambda s: s["window_gpu_busy"],
    "window_fully_free_nodes": lambda s: s["window_fully_free_nodes"],
    "held_idle_gpu_hours": lambda s: s["held_idle_gpu_hours"],
    "wait_mean_s": lambda s: s["queueing_delay_seconds"]["mean"],
    "wait_p50_s": lambda s: s["queueing_delay_seconds"]["p50"],
    "wait_p95_s": lambda s: s["queueing_delay_seconds"]["p95"],
    "jct_mean_s": lambda s: s["jct_seconds"]["mean"],
    "jct_p50_s": lambda s: s["jct_seconds"]["p50"],
    "jct_p95_s": lambda s: s["jct_seconds"]["p95"],
    "makespan_s": lambda s: s["makespan_seconds"],
    "all_finished": lambda s: float(s["all_finished"]),
    "never_started": lambda s: s["never_started"],
    "never_started_holding_gpus": lambda s: s["never_started_holding_gpus"],
    "multi_node_in_one_rack": lambda s: s["multi_node_in_one_rack"],
    "multi_node_in_one_block": lambda s: s["multi_node_in_one_block"],
    "mean_slowdown_multi_node": lambda s: s["mean_slowdown_multi_node"],
    "fully_free_nodes_mean": lambda s: s["fully_free_nodes_mean"],
    "high_wait_p50_s": lambda s: s["high_priority_wait_seconds"]["p50"],
    "high_wait_p95_s": lambda s: s["high_priority_wait_seconds"]["p95"],
    "evicted_gpus": lambda s: s["evicted_gpus"],
    "job_evictions": lambda s: s["job_evictions"],
    "gpu_hours_lost": lambda s: s["gpu_hours_lost"],
    "biggest_gang_max_wait_s": lambda s: s["biggest_gang_max_wait_seconds"],
    "cycle_ms_mean": lambda s: _ms(s["scheduler_seconds_per_cycle"]["mean"]),
    "cycle_ms_p50": lambda s: _ms(s["scheduler_seconds_per_cycle"].get("p50")),
    "cycle_ms_p95": lambda s: _ms(s["scheduler_seconds_per_cycle"]["p95"]),
    "snapshot_ms_mean": lambda s: _ms(s["snapshot_seconds_per_cycle"]["mean"]),
    "cycles": lambda s: s["cycles"],
    "run_wall_seconds": lambda s: s["run_wall_seconds"],
}


QUEUE_METRICS: dict[str, Callable[[Mapping[str, Any]], float | None]] = {
    "high_wait_p50_s": lambda q: q["high_priority_wait_seconds"]["p50"],
    "high_wait_p95_s": lambda q: q["high_priority_wait_seconds"]["p95"],
    "wait_p95_s": lambda q: q["queueing_delay_seconds"]["p95"],
    "evicted_gpus": lambda q: q["evicted_gpus"],
    "job_evictions": lambda q: q["job_evictions"],
    "gpu_hours_lost": lambda q: q["gpu_hours_lost"],
}
"""The figures of one queue's jobs (a run's `per_queue`, when the trace has queues)."""


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def aggregate(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Mean, sample standard deviation and every seed's value, per (load, model, policy)."""
    keys = sorted(
        {(r["load"], r["slowdown_model"], r["policy"]) for r in runs},
        key=lambda k: (k[0], k[1] != "on", POLICY_ORDER.index(k[2])),
    )
    rows = []
    for load, model, policy in keys:
        group = sorted(
            (
                r
                for r in runs
                if (r["load"], r["slowdown_model"], r["policy"]) == (load, model, policy)
            ),
            key=lambda r: r["seed"],
        )
        row: dict[str, Any] = {
            "load": load,
            "slowdown_model": model,
            "policy": policy,
            "seeds": [r["seed"] for r in group],
        }
        for name, get in METRICS.items():
            row[name] = _spread([get(r) for r in group])
        queues = sorted({q for r in group for q in r.get("per_queue", {})})
        if queues:
            row["per_queue"] = {
                queue: {
                    name: _spread([get(r["per_queue"][queue]) for r in group])
                    for name, get in QUEUE_METRICS.items()
                }
                for queue in queues
            }
        rows.append(row)
    return rows


def _spread(values: Sequence[float | None]) -> dict[str, Any]:
    """Mean, sample standard deviation and the values (None where a run has none)."""
    present = [float(v) for v in values if v is not None]
    return {
        "mean": statistics.fmean(present) if present else None,
        "std": statistics.stdev(present) if len(present) > 1 else 0.0 if present else None,
        "values": list(values),
    }


# ---- plots -------------------------------------------------------------------------------


def redraw_plots(results: Path, plots: Path) -> None:
    """Every workload's plots from its results file, as the run that wrote it drew them:
    a table regenerated after a partial rerun gets plots of the same runs."""
    for path in sorted(results.glob("sim-*.json")):
        document = json.loads(path.read_text())
        plot(document["workload"], document["runs"], document["aggregate"], plots)


def plot(
    workload: str, runs: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]], out: Path
) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kept = sorted((r for r in runs if "series" in r), key=lambda r: POLICY_ORDER.index(r["policy"]))
    if not kept:
        return []
    load, seed = kept[0]["load"], kept[0]["seed"]
    subtitle = f"{workload}, load {load:g}, seed {seed}, slowdown model on"
    hours = 3600.0
    files = []

    def save(fig: Any, name: str) -> None:
        path = out / f"sim-{workload}-{name}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)

    def over_time(
        name: str, values: Any, ylabel: str, title: str, legend: str, **axes: Any
    ) -> None:
        """One step line per policy against virtual time."""
        fig, ax = plt.subplots(figsize=(8, 4.2))
        for r in kept:
            series = r["series"]
            ax.step(
                [t / hours for t in series["time"]],
                values(series),
                where="post",
                label=r["policy"],
                color=COLORS[r["policy"]],
                lw=1.3,
            )
        ax.set(xlabel="virtual time (h)", ylabel=ylabel, title=f"{title}\n{subtitle}", **axes)
        ax.legend(loc=legend)
        ax.grid(alpha=0.3)
        save(fig, name)

    over_time(
        "allocation",
        lambda series: [a * 100 for a in series["allocation"]],
        "GPUs allocated (%)",
        "GPU allocation over time",
        "lower right",
        ylim=(0, 102),
    )

    if any(r["jct_cdf_seconds"] for r in kept):
        fig, ax = plt.subplots(figsize=(8, 4.2))
        for r in kept:
            cdf = r["jct_cdf_seconds"]
            if cdf:
                ax.plot(
                    [v / hours for v in cdf],
                    [p / 100 for p in range(0, 101, 5)],
                    label=r["policy"],
                    color=COLORS[r["policy"]],
                    lw=1.5,
                )
        ax.set_xscale("log")
        ax.set(
            xlabel="job completion time (h, log scale)",
            ylabel="share of finished jobs",
            title=f"JCT CDF (finished jobs)\n{subtitle}",
        )
        ax.legend(loc="lower right")
        ax.grid(alpha=0.3, which="both")
        save(fig, "jct-cdf")

    on_rows = [r for r in rows if r["load"] == load and r["slowdown_model"] == "on"]
    if any(r["multi_node_in_one_rack"]["mean"] is not None for r in on_rows):
        fig, ax = plt.subplots(figsize=(8, 4.2))
        width = 0.38
        for i, r in enumerate(on_rows):
            for j, (key, label) in enumerate(
                (
                    ("multi_node_in_one_rack", "one rack"),
                    ("multi_node_in_one_block", "one block / aggregation"),
                )
            ):
                m = r[key]
                ax.bar(
                    i + (j - 0.5) * width,
                    (m["mean"] or 0) * 100,
                    width,
                    yerr=(m["std"] or 0) * 100,
                    color=COLORS[r["policy"]],
                    alpha=1.0 if j == 0 else 0.45,
                    capsize=3,
                    label=label if i == 0 else None,
                    edgecolor="black",
                    lw=0.5,
                )
        ax.set_xticks(range(len(on_rows)), [r["policy"] for r in on_rows])
        ax.set(
            ylabel="multi-node gangs (%)",
            ylim=(0, 105),
            title=f"Locality: multi-node gangs inside one rack (solid) / one block (light)\n"
            f"{workload}, load {load:g}, mean and std over seeds {on_rows[0]['seeds']}",
        )
        ax.grid(alpha=0.3, axis="y")
        save(fig, "locality")

    over_time(
        "free-nodes",
        lambda series: series["fully_free_nodes"],
        "nodes with every GPU free",
        "Fully free nodes over time (fragmentation)",
        "upper right",
    )
    return files


# ---- README table ------------------------------------------------------------------------


def _fmt(cell: Mapping[str, Any], scale: float = 1.0, digits: int = 2, pct: bool = False) -> str:
    mean, std = cell["mean"], cell["std"]
    if mean is None:
        return "-"
    if pct:
        mean, std, digits = mean * 100, (std or 0) * 100, 0
    mean, std = mean / scale, (std or 0) / scale
    text = f"{mean:.{digits}f}"
    n = sum(1 for v in cell["values"] if v is not None)
    return f"{text} ± {std:.{digits}f}" if n > 1 else text


ON_COLUMNS: list[tuple[str, str, Callable[[Mapping[str, Any]], str]]] = [
    ("GPU alloc % (steady)", "window_gpu_allocation", lambda c: _fmt(c, pct=True)),
    ("GPU busy % (steady)", "window_gpu_busy", lambda c: _fmt(c, pct=True)),
    ("GPU alloc % (whole run)", "gpu_allocation", lambda c: _fmt(c, pct=True)),
    ("GPU alloc % at the end", "final_gpu_allocation", lambda c: _fmt(c, 0.01, 2)),
    ("idle held GPU-h", "held_idle_gpu_hours", lambda c: _fmt(c, digits=0)),
    ("wait p50 h", "wait_p50_s", lambda c: _fmt(c, 3600)),
    ("wait p95 h", "wait_p95_s", lambda c: _fmt(c, 3600)),
    ("JCT mean h", "jct_mean_s", lambda c: _fmt(c, 3600)),
    ("JCT p50 h", "jct_p50_s", lambda c: _fmt(c, 3600)),
    ("JCT p95 h", "jct_p95_s", lambda c: _fmt(c, 3600)),
    ("makespan h", "makespan_s", lambda c: _fmt(c, 3600, 1)),
    ("never started", "never_started", lambda c: _fmt(c, digits=1)),
    ("gangs in 1 rack %", "multi_node_in_one_rack", lambda c: _fmt(c, pct=True)),
    ("in 1 block %", "multi_node_in_one_block", lambda c: _fmt(c, pct=True)),
    ("fully free nodes (steady)", "window_fully_free_nodes", lambda c: _fmt(c, digits=1)),
    ("cycle ms mean", "cycle_ms_mean", lambda c: _fmt(c, digits=1)),
    ("cycle ms p50", "cycle_ms_p50", lambda c: _fmt(c, digits=1)),
    ("cycle ms p95", "cycle_ms_p95", lambda c: _fmt(c, digits=1)),
]
OFF_COLUMNS = [ON_COLUMNS[i] for i in (0, 1, 6, 7, 8, 9, 10, 11)]
PREEMPTION_COLUMNS: list[tuple[str, str, Callable[[Mapping[str, Any]], str]]] = [
    ("high-priority wait p50 h", "high_wait_p50_s", lambda c: _fmt(c, 3600)),
    ("high-priority wait p95 h", "high_wait_p95_s", lambda c: _fmt(c, 3600)),
    ("GPUs evicted", "evicted_gpus", lambda c: _fmt(c, digits=0)),
    ("jobs evicted", "job_evictions", lambda c: _fmt(c, digits=1)),
    ("GPU-h of work lost", "gpu_hours_lost", lambda c: _fmt(c, digits=1)),
    ("never started", "never_started", lambda c: _fmt(c, digits=1)),
    ("biggest gangs' max wait h", "biggest_gang_max_wait_s", lambda c: _fmt(c, 3600)),
]
"""Shown for workloads with more than one priority (waits count never-started jobs)."""
QUEUE_COLUMNS: list[tuple[str, str, Callable[[Mapping[str, Any]], str]]] = [
    ("high-priority wait p50 h", "high_wait_p50_s", lambda c: _fmt(c, 3600)),
    ("high-priority wait p95 h", "high_wait_p95_s", lambda c: _fmt(c, 3600)),
    ("wait p95 h (started jobs)", "wait_p95_s", lambda c: _fmt(c, 3600)),
    ("GPUs evicted", "evicted_gpus", lambda c: _fmt(c, digits=0)),
    ("jobs evicted", "job_evictions", lambda c: _fmt(c, digits=1)),
    ("GPU-h of work lost", "gpu_hours_lost", lambda c: _fmt(c, digits=1)),
]
"""Per queue, for workloads with more than one queue (evictions count against the queue
of the job evicted)."""
README_HIDDEN = ("phalanx-evict-always",)
"""Policies left out of the README's headline table (shown in docs/benchmarks/sim-results.md):
a variant of Phalanx that only shows what one rule changes."""
README_QUEUE_POLICIES = ("phalanx", "kueue-like", "kube-default")
"""The policies of the README's per-queue table: Phalanx, the queue-aware baseline and
the issue's baseline."""


def _hours(v: float) -> str:
    return f"{v / 3600:.2f} h"


# (metric, higher is better, label, format)
LOSS_METRICS: tuple[tuple[str, bool, str, Callable[[float], str]], ...] = (
    ("window_gpu_busy", True, "GPU busy (steady window)", lambda v: f"{v * 100:.1f}%"),
    ("final_gpu_allocation", True, "GPU allocation at the end", lambda v: f"{v * 100:.1f}%"),
    ("wait_p50_s", False, "wait p50", _hours),
    ("wait_p95_s", False, "wait p95", _hours),
    ("jct_mean_s", False, "JCT mean", _hours),
    ("jct_p95_s", False, "JCT p95", _hours),
    ("never_started", False, "jobs never started", lambda v: f"{v:.1f}"),
    ("high_wait_p50_s", False, "high-priority wait p50", _hours),
    ("high_wait_p95_s", False, "high-priority wait p95", _hours),
    ("evicted_gpus", False, "GPUs evicted", lambda v: f"{v:.0f}"),
    ("gpu_hours_lost", False, "GPU-hours of work lost to evictions", lambda v: f"{v:.1f}"),
    ("biggest_gang_max_wait_s", False, "max wait of the biggest gangs", _hours),
    ("window_fully_free_nodes", True, "fully free nodes (steady)", lambda v: f"{v:.1f}"),
    ("cycle_ms_mean", False, "scheduler time per cycle", lambda v: f"{v:.1f} ms"),
)


def losses(
    workload: str, rows: Sequence[Mapping[str, Any]], why: Mapping[str, str] | None = None
) -> list[str]:
    """Every metric where phalanx's mean is worse than the best baseline by more than 2%;
    `why`: per metric, what the workload file says about it (`lossesExplained`)."""
    found = []
    for load, model in sorted({(r["load"], r["slowdown_model"]) for r in rows}):
        same = {r["policy"]: r for r in rows if (r["load"], r["slowdown_model"]) == (load, model)}
        ours = same.get("phalanx")
        if ours is None:
            continue
        for key, higher, label, fmt in LOSS_METRICS:
            if key not in ours:
                continue  # a results file from before the metric existed
            mine = ours[key]["mean"]
            others = [
                (p, r[key]["mean"])
                for p, r in same.items()
                if p != "phalanx" and key in r and r[key]["mean"] is not None
            ]
            if mine is None or not others:
                continue
            best_policy, best = (max if higher else min)(others, key=lambda pv: pv[1])
            worse = best - mine if higher else mine - best
            if worse > 0.02 * abs(best) and fmt(mine) != fmt(best):
                reason = f": {why[key]}" if why and key in why else ""
                found.append(
                    f"- {workload}, load {load:g}, slowdown model {model}: {label} "
                    f"{fmt(mine)} vs {fmt(best)} ({best_policy}){reason}"
                )
    return found


def table(
    workload: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    runs: Sequence[Mapping[str, Any]],
) -> str:
    first = runs[0]
    lines = [
        f"### {workload['name']}",
        "",
        f"Cluster `{workload['cluster']}` ({first['nodes']} nodes, {first['gpus']} GPUs); "
        f"{first['jobs']} jobs per run; seeds {list(workload['seeds'])}; "
        f"cycle period {first['cycle_period_seconds']:g} s; horizon "
        f"{workload.get('horizonFactor', 2.0):g}x the last arrival. Mean ± sample std over seeds.",
        "",
    ]
    if workload.get("note"):
        lines += [" ".join(str(workload["note"]).split()), ""]
    for model, columns in (("on", ON_COLUMNS), ("off", OFF_COLUMNS)):
        subset = [r for r in rows if r["slowdown_model"] == model]
        if not subset:
            continue
        columns = _shown(workload, columns)
        lines += [f"Slowdown model **{model}**:", ""]
        lines.append("| load | policy | " + " | ".join(c[0] for c in columns) + " |")
        lines.append("|---|---|" + "---|" * len(columns))
        for r in subset:
            cells = [_cell(r, key, fmt) for _, key, fmt in columns]
            lines.append(f"| {r['load']:g} | {r['policy']} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines + preemption_table(rows, first) + queue_table(rows))


def _shown(
    workload: Mapping[str, Any], columns: list[tuple[str, str, Callable[[Mapping[str, Any]], str]]]
) -> list[tuple[str, str, Callable[[Mapping[str, Any]], str]]]:
    """The allocation at the end is a figure only where pods never leave (the Alibaba
    mode: the FGD paper's measure at 130% demand); elsewhere the drain empties the cluster."""
    if workload.get("trace", {}).get("generator") == "alibaba":
        return columns
    return [column for column in columns if column[1] != "final_gpu_allocation"]


def _cell(row: Mapping[str, Any], key: str, fmt: Callable[[Mapping[str, Any]], str]) -> str:
    """A metric's cell; "-" for a results file written before the metric existed."""
    return fmt(row[key]) if key in row else "-"


def preemption_table(rows: Sequence[Mapping[str, Any]], first: Mapping[str, Any]) -> list[str]:
    """Priorities and evictions, when the trace has more than one priority."""
    subset = [r for r in rows if (r.get("high_wait_p50_s") or {}).get("mean") is not None]
    if not subset:
        return []
    lines = [
        f"Priorities and evictions (biggest gangs: {first['biggest_gang_gpus']} GPUs; a wait "
        "counts every second a job waited, until the end of the run for one still waiting):",
        "",
        "| load | slowdown | policy | " + " | ".join(c[0] for c in PREEMPTION_COLUMNS) + " |",
        "|---|---|---|" + "---|" * len(PREEMPTION_COLUMNS),
    ]
    for r in subset:
        cells = [_cell(r, key, fmt) for _, key, fmt in PREEMPTION_COLUMNS]
        lines.append(
            f"| {r['load']:g} | {r['slowdown_model']} | {r['policy']} | " + " | ".join(cells) + " |"
        )
    lines.append("")
    return lines


def queue_table(
    rows: Sequence[Mapping[str, Any]], policies: Sequence[str] | None = None
) -> list[str]:
    """Each queue's waits and evictions, per (load, slowdown model, policy), when the
    trace has more than one queue; `policies`: only those, in that order."""
    subset = [r for r in rows if r.get("per_queue")]
    if policies is not None:
        subset = sorted(
            (r for r in subset if r["policy"] in policies),
            key=lambda r: (r["load"], r["slowdown_model"], policies.index(r["policy"])),
        )
    if not subset:
        return []
    lines = [
        "Per queue (a job's evictions count against its own queue):",
        "",
        "| load | slowdown | queue | policy | "
        + " | ".join(c[0] for c in QUEUE_COLUMNS) + " |",
        "|---|---|---|---|" + "---|" * len(QUEUE_COLUMNS),
    ]
    for queue in sorted({q for r in subset for q in r["per_queue"]}):
        for r in subset:
            figures = r["per_queue"].get(queue)
            if figures is None:
                continue
            cells = [_cell(figures, key, fmt) for _, key, fmt in QUEUE_COLUMNS]
            lines.append(
                f"| {r['load']:g} | {r['slowdown_model']} | {queue} | {r['policy']} | "
                + " | ".join(cells) + " |"
            )
    lines.append("")
    return lines


def readme_parts(results_dir: Path) -> tuple[list[str], list[str], str]:
    """Tables from every results file, so rerunning one workload keeps the others."""
    sections: list[str] = []
    lost: list[str] = []
    count = 0
    for path in sorted(results_dir.glob("sim-*.json")):
        document = json.loads(path.read_text())
        runs, rows = document["runs"], document["aggregate"]
        sections.append(table(document["definition"], rows, runs))
        lost += losses(document["workload"], rows, explained(document["workload"]))
        count += len(runs)
    timing = (
        f"Generated by `python -m bench.sim` from {count} simulations (`bench/results/sim-*.json`)."
    )
    return sections, lost, timing


def explained(workload: str) -> dict[str, str]:
    """`lossesExplained` of the workload's file (read now, so a new explanation needs no
    rerun): metric -> why Phalanx loses there, shown in the generated losses list."""
    path = WORKLOADS / f"{workload}.yaml"
    if not path.exists():
        return {}
    found = yaml.safe_load(path.read_text()).get("lossesExplained") or {}
    return {str(k): " ".join(str(v).split()) for k, v in found.items()}


HEADLINE = ("GPU alloc % (steady)", "GPU busy % (steady)", "wait p95 h", "JCT mean h",
            "never started", "gangs in 1 rack %", "cycle ms p50", "cycle ms p95")
"""The README's columns (of `ON_COLUMNS`), for each workload at its highest load."""


def headline(results_dir: Path, lost: int, timing: str) -> str:
    """The README block: every policy on each workload at its highest load, slowdown on."""
    columns = [c for c in ON_COLUMNS if c[0] in HEADLINE]
    lines = [
        BEGIN, "",
        f"{timing} Each workload at its highest load, slowdown model on; mean ± sample std "
        f"over seeds. Every load, the slowdown model off, priorities and evictions, and where "
        f"Phalanx loses ({lost} figures): [{PAGE}](../{PAGE}).",
        "",
        "| workload | load | policy | " + " | ".join(c[0] for c in columns) + " |",
        "|---|---|---|" + "---|" * len(columns),
    ]
    queues: list[str] = []
    for path in sorted(results_dir.glob("sim-*.json")):
        document = json.loads(path.read_text())
        rows = [r for r in document["aggregate"] if r["slowdown_model"] == "on"]
        top = max((r["load"] for r in rows), default=None)
        for r in rows:
            if r["load"] == top and r["policy"] not in README_HIDDEN:
                cells = [_cell(r, key, fmt) for _, key, fmt in columns]
                lines.append(f"| {document['workload']} | {r['load']:g} | {r['policy']} | "
                             + " | ".join(cells) + " |")
        per_queue = queue_table([r for r in rows if r["load"] == top], README_QUEUE_POLICIES)
        if per_queue:
            queues += ["", f"{document['workload']}, load {top:g}, slowdown model on. "
                       + per_queue[0], *per_queue[1:-1]]
    lines += [*queues, "", END]
    return "\n".join(lines)


def generated(results_dir: Path = RESULTS) -> Generated:
    """The README block and docs/benchmarks/sim-results.md, from `results_dir`/sim-*.json."""
    sections, lost, timing = readme_parts(results_dir)
    page = [
        *common.page_header("Simulator benchmarks: results", "bench/results/sim-*.json"),
        timing,
        "",
        *sections,
        "#### Where Phalanx loses (generated: worse than the best baseline by more than 2%)",
        "",
        *(lost or ["- nowhere by more than 2%"]),
        "",
    ]
    return Generated("sim", COMMAND, {"sim": headline(results_dir, len(lost), timing)},
                     "\n".join(page))


# ---- main --------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.sim", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--smoke", action="store_true", help="tiny run into a temporary folder")
    parser.add_argument("--only", nargs="*", default=[], help="workload names to run")
    parser.add_argument("--policies", nargs="*", default=[], help="policies to run (default: all)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--out", type=Path, default=None, help="results folder (default: bench/)")
    parser.add_argument(
        "--readme-only", action="store_true",
        help="rewrite the README table and docs/benchmarks/sim-results.md and redraw "
        "bench/plots from bench/results without running anything",
    )
    args = parser.parse_args(argv)
    if args.readme_only:
        common.write([generated()])
        redraw_plots(RESULTS, PLOTS)
        return 0
    workloads = read_workloads(args.smoke, args.only)
    if not workloads:
        print("no workload to run", file=sys.stderr)
        return 2
    if args.smoke and args.out is None:
        args.out = Path(tempfile.mkdtemp(prefix="phalanx-bench-sim-"))
    results_dir = (args.out / "results") if args.out else RESULTS
    plots_dir = (args.out / "plots") if args.out else PLOTS
    results_dir.mkdir(parents=True, exist_ok=True)
    plots_dir.mkdir(parents=True, exist_ok=True)

    tasks = [
        t for w in workloads for t in tasks_of(w) if not args.policies or t.policy in args.policies
    ]
    started = time.perf_counter()
    print(f"{len(tasks)} simulations over {args.jobs} process(es)", flush=True)
    results: list[dict[str, Any]] = []
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            for done, summary in enumerate(pool.map(run_task, tasks), 1):
                results.append(summary)
                _progress(done, len(tasks), summary, started)
    else:
        for done, task in enumerate(tasks, 1):
            results.append(run_task(task))
            _progress(done, len(tasks), results[-1], started)
    elapsed = time.perf_counter() - started

    for workload in workloads:
        runs = [r for r in results if r["workload"] == workload["name"]]
        document = {
            "workload": workload["name"],
            "definition": workload,
            "command": "python -m bench.sim" + (" --smoke" if args.smoke else ""),
            "simulations": len(runs),
            "simulation_seconds": round(sum(r["run_wall_seconds"] for r in runs), 1),
            "aggregate": aggregate(runs),
            "runs": sorted(
                runs, key=lambda r: (r["load"], r["seed"], r["slowdown_model"], r["policy"])
            ),
        }
        path = results_dir / f"sim-{workload['name']}.json"
        path.write_text(json.dumps(document, indent=1, default=_json_default) + "\n")
        files = plot(workload["name"], runs, document["aggregate"], plots_dir)
        print(f"wrote {path} and {len(files)} plots", flush=True)
    if not args.smoke and not args.policies and args.out is None:
        common.write([generated()])  # only from bench/results, the tables' source
    print(f"done in {elapsed:.0f} s; results in {results_dir}", flush=True)
    return 0


def _progress(done: int, total: int, s: Mapping[str, Any], started: float) -> None:
    print(
        f"[{done}/{total} {time.perf_counter() - started:6.0f}s] {s['workload']} "
        f"load={s['load']:g} seed={s['seed']} model={s['slowdown_model']} {s['policy']}: "
        f"alloc={s['gpu_allocation']:.1%} run={s['run_wall_seconds']:.1f}s",
        flush=True,
    )


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return str(value)


if __name__ == "__main__":
    raise SystemExit(main())
