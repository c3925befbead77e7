"""The tables of the end-to-end benchmark with three contenders and two modes: the headline
in bench/README.md, every figure in docs/benchmarks/e2e-results.md (pure: from the results
JSON only, so the two cannot drift)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from bench import common
from bench.e2e.report import LABELS, MORE_LABELS, _fmt, after_last_creation

COMMAND = "python -m bench.e2e"
PAGE = "docs/benchmarks/e2e-results.md"
README_FILES = ("e2e", "e2e-backlog-1000", "e2e-backlog-5000", "e2e-backlog-12500")
"""The results files (bench/results/<name>.json) with a headline block in bench/README.md
(`make bench-e2e-5000`'s, Kubernetes 1.36 and no ceiling, is in the page only)."""
PAGE_FILES = ("e2e", "e2e-5000", "e2e-backlog-1000", "e2e-backlog-5000", "e2e-backlog-12500")
"""The results files with their full tables in docs/benchmarks/e2e-results.md."""

NAMES = {"phalanx": "Phalanx (binder)", "kube-scheduler": "kube-scheduler",
         "kube-scheduler-gang": "kube-scheduler + gang/topology plugins",
         "ceiling": "ceiling (bindings only)"}
CEILING = "ceiling"
"""Not a scheduler: the API server's bind rate (bench/e2e/ceiling.py). Phalanx's pods per
second are read as a share of it (target TARGET_SHARE); it is not in "where Phalanx loses",
since it decides nothing and loses nothing by construction."""
MODE_TEXT = {
    "arrival": "Arrival mode: the scheduler runs before the first object is created; times "
               "from the start of the submission (a gang's latency from its first object).",
    "backlog": "Backlog mode: every PodGroup and pod exists before the scheduler starts; "
               "times from the scheduler's start (process launch) to the last binding.",
}
FIGURES = {**LABELS, **MORE_LABELS}
FIGURES["pods_per_second"] = "pods bound per second (from the start to the last binding)"
FIGURES["gang_p50_s"] = "gang latency p50 (s)"
FIGURES["gang_p99_s"] = "gang latency p99 (s)"
FIGURES["cpu_seconds"] = "scheduler CPU seconds (start to end of settle)"
TARGET_RATIO = 1.5  # backlog pods/s, Phalanx over each kube-scheduler
TARGET_SHARE = 0.8  # backlog pods/s, Phalanx over the ceiling
TARGET_RACK_PCT = 95.0
TARGET_RSS_MIB = 1024.0
TARGET_KEYS = {"kubeSchedulerRatio": TARGET_RATIO, "inOneRackPct": TARGET_RACK_PCT,
               "peakRssMiB": TARGET_RSS_MIB}  # fmt: skip
"""A workload file's `targets` (read when the table is drawn, so a goal set for it needs no
rerun) replace these defaults; null: the figure is reported, with no goal (at 12,500
nodes gangs of 128 pods in a cluster 71% full often find no rack with room)."""


def targets_of(results: Mapping[str, Any]) -> dict[str, float | None]:
    """The goals of the run's workload: its file's `targets` over `TARGET_KEYS`."""
    name = str(results.get("parameters", {}).get("name", ""))
    path = common.ROOT / "bench" / "workloads" / f"{name}.yaml"
    found = (yaml.safe_load(path.read_text()) or {}).get("targets") if name and path.exists() \
        else None
    merged: dict[str, float | None] = dict(TARGET_KEYS)
    for key, value in (found or {}).items():
        if key not in TARGET_KEYS:
            raise ValueError(f"{path}: targets.{key} is not one of {sorted(TARGET_KEYS)}")
        merged[key] = None if value is None else float(value)
    return merged


def section_name(output: Path) -> str:
    """`e2e.json` -> `e2e`, `e2e-5000.json` -> `e2e-5000`: one README section per file."""
    return output.stem


def markers(name: str) -> tuple[str, str]:
    return common.markers(name, COMMAND)


def renders(output: Path) -> bool:
    """Whether `output` is the source of generated tables (so a run writing it rewrites them)."""
    return output.resolve() == common.RESULTS / output.name and output.stem in PAGE_FILES


def generated(results: Path = common.RESULTS) -> common.Generated:
    """The README blocks and docs/benchmarks/e2e-results.md, from `results`/<name>.json."""
    documents = {name: json.loads((results / f"{name}.json").read_text()) for name in PAGE_FILES}
    page = common.page_header("End-to-end benchmark: results", ", ".join(
        f"bench/results/{name}.json" for name in PAGE_FILES))
    for name, results_of in documents.items():
        section = readme_section(results_of, name).split("\n")[2:-1]  # without the markers
        page += [f"## {results_of['parameters']['nodes']:,} nodes, "
                 f"{' and '.join(results_of['modes'])} ({results_of['finished_at'][:10]}): "
                 f"`bench/results/{name}.json`", "", *section]
    blocks = {name: readme_section(documents[name], name, full=False) for name in README_FILES}
    return common.Generated("e2e", COMMAND, blocks, "\n".join(page))


def _load(averages: object) -> str:
    """The 1, 5 and 15 minute load averages as `os.getloadavg` gives them, written the same
    whether they come from the run (a tuple) or from its JSON (a list)."""
    return str(tuple(averages)) if isinstance(averages, list) else str(averages)


def readme_section(results: Mapping[str, Any], name: str, full: bool = True) -> str:
    """The block of results file `name`; `full=False`: the headline (the figures compared,
    the targets), without each run's own rows and the list of where Phalanx loses."""
    begin, end = markers(name)
    params = results["parameters"]
    machine = results["machine"]
    lines = [
        begin, "",
        f"Generated by `{results['command']}` on {results['finished_at']} "
        f"({results['duration_s'] / 60:.1f} min in all; load average "
        f"{_load(machine['load_average_start'])} at start, "
        f"{_load(machine['load_average_end'])} at the end; "
        f"{machine['cpus']} CPUs, {machine['python']}, Kubernetes "
        f"{results['versions']['kubernetes']}, kwok {results['versions']['kwok']}; "
        f"bind times {_bind_times(results)}).",
        "",
        f"Cluster: {params['nodes']:,} kwok nodes x {params['gpus_per_node']} GPUs "
        f"({params['cluster_gpus']:,} GPUs). Workload (seed {params['seed']}): "
        f"{params['gangs']:,} gangs of {_sizes(params)} pods, {params['pods']:,} pods, "
        f"{params['gpus']:,} GPUs ({100 * params['gpus'] / params['cluster_gpus']:.0f}% of "
        f"the cluster), {params['concurrency']} creations in flight. kube-scheduler client "
        f"QPS {params['kube_scheduler_qps']}, burst {params['kube_scheduler_burst']}.",
    ]
    losses: list[str] = []
    for mode, data in results["modes"].items():
        lines += ["", f"**{mode}** ({len(data['rounds'])} round(s); the mean of the rounds). "
                  + MODE_TEXT[mode], ""]
        lines += _mode_table(data, mode, full)
        for other, comparison in data["comparisons"].items():
            if other == CEILING:
                continue
            if _bound_nothing(comparison, "kube_scheduler"):
                losses.append(f"{mode}: nothing compared with {NAMES[other]}, which bound no pod")
                continue
            losses += [f"{mode}: {loss}" for loss in comparison["phalanx_loses"]]
    lines += ["", "Targets (ratios from one run):", "", *_targets(results)]
    if full:
        lines += ["", "Where Phalanx loses (generated):", ""]
        lines += [f"- {loss}" for loss in losses or ["nowhere in these figures"]]
    else:
        lines += ["", f"Each run's own figures and where Phalanx loses ({len(losses)} figures): "
                  f"[{PAGE}](../{PAGE})."]
    lines += ["", end]
    if not full:  # README blocks without the blank lines inside their markers (its 400 lines)
        lines = [begin, *lines[2:-2], end]
    return "\n".join(lines)


def _bind_times(results: Mapping[str, Any]) -> str:
    """Where the run's bind times come from: the API server's replies (its audit log) or,
    in runs from before it was kept, the benchmark's watcher (seconds late under load)."""
    runs = [run for mode in results["modes"].values() for run in mode["runs"].values()]
    audited = all((run.get("bind_time_sources") or {}).get("api_server_audit")
                  for run in runs if run.get("throughput", {}).get("pods_bound"))
    return "from kube-apiserver's audit log" if audited else "as the benchmark's watcher saw them"


def _sizes(params: Mapping[str, Any]) -> str:
    sizes = [int(k) for k in params.get("gangs_by_pods", {})]
    return f"{min(sizes)}-{max(sizes)}" if sizes else "?"


def _mode_table(data: Mapping[str, Any], mode: str, full: bool = True) -> list[str]:
    rounds = data["rounds"]
    who = [name for name in NAMES if name in rounds[0]]
    header = "| figure | " + " | ".join(NAMES[w] for w in who) + " |"
    ratios = [w for w in who if w != "phalanx" and w in data["comparisons"]]
    header += "".join(f" Phalanx / {NAMES[w]} |" for w in ratios)
    lines = [header, "|---" * (1 + len(who) + len(ratios)) + "|"]
    for key, label in FIGURES.items():
        means = [_mean(rounds, w, key) for w in who]
        row = f"| {label} | " + " | ".join(_fmt(m) for m in means) + " |"
        row += "".join(
            f" {_fmt(data['comparisons'][w]['ratio_phalanx_over_kube'].get(key))} |"
            for w in ratios)
        lines.append(row)
    if not full:
        return lines
    runs = data["runs"]
    extra: list[tuple[str, Callable[[Mapping[str, Any]], str]]] = [
        ("pods bound / pods (round 1)", lambda r: f"{r['throughput']['pods_bound']:,} / "
                                                  f"{r['pods']:,}"),
        ("first / last binding (s, round 1)",
         lambda r: f"{_fmt(r['throughput'].get('first_bound_s'))} / "
                   f"{_fmt(r['throughput'].get('last_bound_s'))}"),
        ("scheduler ready after (s, round 1)", lambda r: _fmt(r.get("component_ready_s"))),
        ("gangs left partly bound (round 1)",
         lambda r: _fmt((r.get("partial_gangs") or {}).get("left_partial"))),
        ("API requests, all clients, per bound pod (round 1)",
         lambda r: _fmt(r["api_requests"]["all_clients_per_bound_pod"])),
    ]
    if mode == "arrival":  # near 0: the pods per second are the submission's pace
        extra.append(("last binding after the last creation (s, round 1)",
                      lambda r: _fmt(after_last_creation(r))))
    for label, value in extra:
        lines.append(f"| {label} | " + " | ".join(value(runs[w]) for w in who) + " |"
                     + " |" * len(ratios))
    return lines


def _mean(rounds: list[Mapping[str, Any]], who: str, key: str) -> float | None:
    values = [v for r in rounds if (v := r.get(who, {}).get(key)) is not None]
    return round(sum(values) / len(values), 3) if values else None


def _targets(results: Mapping[str, Any]) -> list[str]:
    lines = []
    goals = targets_of(results)
    ratio_goal, rack_goal, rss_goal = (goals["kubeSchedulerRatio"], goals["inOneRackPct"],
                                       goals["peakRssMiB"])  # fmt: skip
    backlog = results["modes"].get("backlog")
    if backlog:
        for other, comparison in backlog["comparisons"].items():
            ratio = comparison["ratio_phalanx_over_kube"].get("pods_per_second")
            if other == CEILING:
                lines.append(f"- backlog pods/s, Phalanx / {NAMES[other]} >= {TARGET_SHARE}: "
                             f"**{_fmt(ratio)}** "
                             f"({_met(ratio is not None and ratio >= TARGET_SHARE)})")
                continue
            if ratio_goal is None:
                continue
            if _bound_nothing(comparison, "kube_scheduler") and not _bound_nothing(
                    comparison, "phalanx"):
                lines.append(f"- backlog pods/s, Phalanx / {NAMES[other]} >= {ratio_goal:g}: "
                             f"**unbounded** (met: {NAMES[other]} bound no pod)")
                continue
            lines.append(f"- backlog pods/s, Phalanx / {NAMES[other]} >= {ratio_goal:g}: "
                         f"**{_fmt(ratio)}** ({_met(ratio is not None and ratio >= ratio_goal)})")
        ours = backlog["comparisons"] and next(iter(backlog["comparisons"].values()))["phalanx"]
        if ours:
            partial, rack = ours.get("partial_gangs"), ours.get("in_one_rack_pct")
            line = (f"- backlog, Phalanx: 0 partial gangs: **{_fmt(partial)}** "
                    f"({_met(partial == 0)})")
            if rack_goal is not None:
                line += (f"; >= {rack_goal:g}% of multi-node gangs in one rack: **{_fmt(rack)}** "
                         f"({_met(rack is not None and rack >= rack_goal)})")
            lines.append(line)
    arrival = results["modes"].get("arrival")
    if arrival:
        for other, comparison in arrival["comparisons"].items():
            ratio = comparison["ratio_phalanx_over_kube"].get("gang_p99_s")
            lines.append(f"- arrival gang latency p99, Phalanx / {NAMES[other]} <= 1: "
                         f"**{_fmt(ratio)}** ({_met(ratio is not None and ratio <= 1)})")
    # From Phalanx's own rounds, not the comparisons: a run of Phalanx alone (--only
    # phalanx) has none, and its peak is measured all the same.
    peaks = [r["phalanx"].get("peak_rss_mib") for m in results["modes"].values()
             for r in m["rounds"] if "phalanx" in r]
    peak = max((p for p in peaks if p is not None), default=None)
    if rss_goal is not None:
        lines.append(f"- operator peak RSS < {rss_goal:g} MiB: **{_fmt(peak)} MiB** "
                     f"({_met(peak is not None and peak < rss_goal)})")
    return lines


def _bound_nothing(comparison: Mapping[str, Any], who: str) -> bool:
    return not comparison[who].get("pods_per_second")


def _met(flag: bool) -> str:
    return "met" if flag else "missed"
