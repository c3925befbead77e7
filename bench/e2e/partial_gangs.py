"""The gangs a bench.e2e run saw partly bound, beside when the operator had all their replies.

    python -m bench.e2e.partial_gangs RESULTS.json RUN_DIR/backlog-phalanx/logs/phalanx-operator.log
                                  [--mode backlog]

Results from before 2026-12-05 time a binding when its watch event reached the benchmark's
own watcher (since then, when the API server answered it: bench/e2e/server_times.py); the
operator logs "gang placed" once the API server has answered every binding of the gang
(JSON log, `--log-format=json` as bench.e2e runs it), with `burst_seconds`, from its
burst's start (slots taken, first request about to leave) to its last reply. For each gang
over the 2-s spread (`spread_gangs` in the results): its pods, the first and last binding
the benchmark saw and when the operator had every reply, in seconds from the run's start,
and the burst. The API server bound every pod of the gang inside its burst: a gang whose
burst is short while the benchmark saw its bindings further apart was bound together,
and the rest of its spread is the watch's delivery, not the writes.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from bench.e2e.operator_log import read_log


def placed_times(log: Path, started: float) -> dict[str, tuple[float, float]]:
    """Gang name -> (seconds from `started` when the operator logged it placed, its burst's
    seconds; NaN in a log from before the burst was logged)."""
    with log.open() as lines:
        _, gangs = read_log(lines)
    return {g.group.split("/")[-1]: (g.placed - started, g.burst_seconds) for g in gangs}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("log", type=Path)
    parser.add_argument("--mode", default="backlog")
    args = parser.parse_args(argv)
    run = json.loads(args.results.read_text())["modes"][args.mode]["runs"]["phalanx"]
    placed = placed_times(args.log, run["measured_from_epoch"])
    rows = run.get("spread_gangs") or []
    print(f"{run['partial_gangs']['seen']} gangs seen partly bound; the first {len(rows)}:")
    print(f"{'gang':>8} {'pods':>5} {'first seen':>11} {'last seen':>10} {'all replies':>12} "
          f"{'burst':>6}")
    before_last = before_first = short = 0
    for name, pods, first, spread in rows:
        replied, burst = placed.get(name, (math.nan, math.nan))
        before_last += replied < first + spread
        before_first += replied < first
        short += burst <= spread_limit(run)
        print(f"{name:>8} {pods:5d} {first:11.2f} {first + spread:10.2f} {replied:12.2f} "
              f"{burst:6.2f}")
    print(f"all replies in before the last binding was seen: {before_last} of {len(rows)}; "
          f"before the first: {before_first}; burst within {spread_limit(run):g} s: {short}")


def spread_limit(run: dict[str, object]) -> float:
    partial = run.get("partial_gangs")
    return float(partial.get("bindings_spread_over_s", 2.0)) if isinstance(partial, dict) else 2.0


if __name__ == "__main__":
    main()
