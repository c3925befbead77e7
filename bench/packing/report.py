"""The generated tables of `python -m bench.packing`: the headline in bench/README.md, every
figure in docs/benchmarks/packing-results.md (pure: from the results JSON only)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.common import RESULTS, Generated, markers, page_header

COMMAND = "python -m bench.packing"
BEGIN, END = markers("packing", COMMAND)
PAGE = "docs/benchmarks/packing-results.md"
COLUMNS = ("phalanx", "fgd", "bestfit", "gang-binpack")
"""The headline's policies, in this order first (any other after them, by name)."""
PAPER: dict[tuple[str, str], float] = {
    ("default", "fgd"): 95.39,
    ("multigpu50", "fgd"): 97.18,
    ("gpushare100", "fgd"): 86.90,
    ("default", "bestfit"): 93.08,
    ("multigpu50", "bestfit"): 95.74,
    ("gpushare100", "bestfit"): 85.01,
}
"""Allocation at 130% in the paper's artifact (hkust-adsl/kubernetes-scheduler-simulator,
experiments/analysis/expected_results/analysis_allo_discrete.csv, column 130, mean of seeds
42-51); the FGD values and BestFit on `default` are the paper's headline figures."""
HARNESS_TOLERANCE = 0.3
MARGIN = 0.5
"""Phalanx's target over the paper's FGD, in points."""


def _cell(stat: Mapping[str, Any], digits: int = 2) -> str:
    return f"{stat['mean']:.{digits}f} ± {stat['std']:.{digits}f}"


def _rows(report: Mapping[str, Any]) -> dict[tuple[str, str], Mapping[str, Any]]:
    return {(r["trace"], r["policy"]): r for r in report["aggregate"]}


def table(report: Mapping[str, Any]) -> list[str]:
    rows = _rows(report)
    lines = [
        "| trace | policy | GPU allocated at 130% demand, % (mean ± std) | paper | "
        "fully free 8-GPU nodes | stranded GPUs | ms per pod |",
        "|---|---|---|---|---|---|---|",
    ]
    for (trace, policy), row in rows.items():
        paper = PAPER.get((trace, policy))
        lines.append(
            f"| {trace} | {policy} | {_cell(row['allocation_at_130'])} | "
            f"{'' if paper is None else f'{paper:.2f}'} | "
            f"{_cell(row['fully_free_8gpu_nodes'], 1)} | {_cell(row['stranded_gpus'], 1)} | "
            f"{row['ms_per_pod']['mean']:.2f} |"
        )
    return lines


def _paired(mine: Mapping[str, Any], other: Mapping[str, Any]) -> str:
    """Phalanx minus the other policy seed by seed (both saw the same arrivals), when the
    two ran on the same seeds: the spread of the difference, not of each figure."""
    if mine.get("seeds") != other.get("seeds") or len(mine.get("seeds", ())) < 2:
        return ""
    diffs = [a - b for a, b in zip(mine["allocation_at_130"]["values"],
                                   other["allocation_at_130"]["values"], strict=True)]
    return (f" (per seed {statistics.fmean(diffs):+.2f} ± {statistics.stdev(diffs):.2f} pt, "
            f"{min(diffs):+.2f} to {max(diffs):+.2f})")


def checks(report: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(every target with its verdict, the misses alone) for the lines under the table."""
    rows = _rows(report)
    verdicts: list[str] = []
    losses: list[str] = []

    def judge(text: str, ok: bool, loss: str) -> None:
        verdicts.append(f"- {text}: **{'met' if ok else 'missed'}**")
        if not ok:
            losses.append(f"- {loss}")

    for (trace, policy), paper in PAPER.items():
        if (trace, policy) in rows:
            ours = rows[trace, policy]["allocation_at_130"]["mean"]
            judge(f"harness: {policy} on {trace} {ours:.2f}% vs the paper's {paper:.2f}% "
                  f"(within {HARNESS_TOLERANCE} pt)", abs(ours - paper) <= HARNESS_TOLERANCE,
                  f"harness: {policy} on {trace} is {ours - paper:+.2f} pt from the paper")
    traces = sorted({t for t, p in rows if p == "phalanx"})
    if not traces:
        losses.append("- Phalanx is not in this run (no `phalanx` policy in the harness yet)")
    for trace in traces:
        mine = rows[trace, "phalanx"]
        alloc = mine["allocation_at_130"]["mean"]
        base = trace.removesuffix("-whole")
        if (base, "fgd") in PAPER and base == trace:
            goal = PAPER[base, "fgd"] + MARGIN
            judge(f"{trace}: Phalanx {alloc:.2f}% >= paper's FGD + {MARGIN} = {goal:.2f}%",
                  alloc >= goal, f"{trace}: allocation {alloc:.2f}% vs {goal:.2f}% "
                  f"(the paper's FGD + {MARGIN}), {alloc - goal:+.2f} pt")
        if (trace, "fgd") in rows:
            fgd = rows[trace, "fgd"]
            free, fgd_free = (mine["fully_free_8gpu_nodes"]["mean"],
                              fgd["fully_free_8gpu_nodes"]["mean"])
            judge(f"{trace}: fully free 8-GPU nodes, Phalanx {free:.1f} >= FGD {fgd_free:.1f}",
                  free >= fgd_free, f"{trace}: {free:.1f} fully free 8-GPU nodes vs FGD's "
                  f"{fgd_free:.1f}")
            fgd_alloc = fgd["allocation_at_130"]["mean"]
            paired = _paired(mine, fgd)
            judge(f"{trace}: Phalanx {alloc:.2f}% >= FGD in this harness + {MARGIN} = "
                  f"{fgd_alloc + MARGIN:.2f}%{paired}", alloc >= fgd_alloc + MARGIN,
                  f"{trace}: allocation {alloc:.2f}% vs FGD (this harness) {fgd_alloc:.2f}%, "
                  f"{alloc - fgd_alloc:+.2f} pt{paired}")
        if (trace, "fgd") in rows:
            cost, fgd_cost = mine["ms_per_pod"]["mean"], rows[trace, "fgd"]["ms_per_pod"]["mean"]
            if cost > fgd_cost:
                losses.append(f"- {trace}: {cost:.1f} ms per pod vs FGD's {fgd_cost:.1f} "
                              "(Phalanx: the pure-Python core; FGD: numpy over all nodes)")
        if trace.endswith("-whole") and (trace, "bestfit") in rows:
            best = rows[trace, "bestfit"]["allocation_at_130"]["mean"]
            judge(f"{trace}: Phalanx {alloc:.2f}% >= BestFit {best:.2f}%", alloc >= best,
                  f"{trace}: allocation {alloc:.2f}% vs BestFit {best:.2f}%, "
                  f"{alloc - best:+.2f} pt")
    return verdicts, losses


def _generated_by(report: Mapping[str, Any]) -> str:
    runs = report["runs"]
    seeds = sorted({r["seed"] for r in runs})
    return (f"Generated by `{report['command'].strip()}` on {report['generated']} "
            f"({len(runs)} runs, seeds {seeds[0]}-{seeds[-1]}, {report['minutes']} min, "
            f"load average {report['load_average'][0]:.2f} at the end; "
            f"CPython {report['python']}). `-whole`: the trace without its fractional pods.")


def readme_section(report: Mapping[str, Any]) -> str:
    """Every figure: the table, every target and where Phalanx loses, between the markers."""
    verdicts, losses = checks(report)
    return "\n".join([
        BEGIN, "", _generated_by(report), "", *table(report), "", "Targets:", "", *verdicts, "",
        "Where Phalanx loses (generated):", "", *(losses or ["- nowhere in this run"]), "", END,
    ])


def headline(report: Mapping[str, Any]) -> str:
    """The README block: allocation by trace and policy, and the targets missed."""
    rows = _rows(report)
    policies = sorted({p for _, p in rows},
                      key=lambda p: (COLUMNS.index(p) if p in COLUMNS else len(COLUMNS), p))
    verdicts, _ = checks(report)
    missed = [v for v in verdicts if v.endswith("**missed**")]
    lines = [
        BEGIN, "", _generated_by(report), "",
        "GPU allocated at 130% demand, % (mean ± std over the seeds):", "",
        "| trace | " + " | ".join(policies) + " | the paper's FGD |",
        "|---|" + "---|" * (len(policies) + 1),
    ]
    for trace in sorted({t for t, _ in rows}):
        cells = [_cell(rows[trace, p]["allocation_at_130"]) if (trace, p) in rows else "-"
                 for p in policies]
        paper = PAPER.get((trace, "fgd"))
        lines.append(f"| {trace} | " + " | ".join(cells)
                     + f" | {'' if paper is None else f'{paper:.2f}'} |")
    lines += ["", f"Targets: {len(verdicts) - len(missed)} met, {len(missed)} missed "
              f"(every figure, target and loss: [{PAGE}](../{PAGE}))"
              + (". Missed:" if missed else "."), ""]
    lines += [*missed, *([""] if missed else []), END]
    return "\n".join(lines)


def generated(results: Path = RESULTS) -> Generated:
    """The README block and docs/benchmarks/packing-results.md, from `results`/packing.json."""
    report = json.loads((results / "packing.json").read_text())
    full = readme_section(report).split("\n")[2:-1]  # without the markers
    page = [*page_header("Packing benchmark (the FGD paper's): results",
                         "bench/results/packing.json"), *full]
    return Generated("packing", COMMAND, {"packing": headline(report)}, "\n".join(page))
