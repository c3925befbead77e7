"""Where a bench.e2e run's gangs waited inside the operator, read from its JSON log.

    python -m bench.e2e.operator_log RUN_DIR/arrival-phalanx/logs/phalanx-operator.log

bench.e2e runs the operator with `--log-format=json`: a "cycle" line per cycle that
started writes (its `seconds`, `snapshot_seconds`, `writes_in_flight` and the garbage
collector's pauses since the last such line, `gc_seconds` and `gc_longest`) and a "gang
placed" line per gang once the API server answered all its bindings (with
`burst_seconds`, from its slots taken to its last reply, and the cycle that decided it).
Per gang, from the end of the cycle that decided it: until its burst started (the plan's
status write and the wait for binding slots) and until its last reply. The benchmark's
own gang latency adds, before these, the pods' creation and the wait for that cycle.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path


@dataclass(frozen=True)
class Cycle:
    ended: float
    seconds: float
    snapshot_seconds: float
    writes_in_flight: int
    gc_seconds: float = 0.0  # the collector's pauses since the last cycle line
    gc_longest: float = 0.0


@dataclass(frozen=True)
class Gang:
    group: str  # NAMESPACE/NAME
    placed: float  # when its last reply came
    cycle: int
    burst_seconds: float  # NaN in a log from before bursts were logged


def stamp(entry: dict[str, object]) -> float:
    return datetime.fromisoformat(str(entry["timestamp"]).replace("Z", "+00:00")).timestamp()


def read_log(lines: Iterable[str]) -> tuple[dict[int, Cycle], list[Gang]]:
    """The cycles (by number) and the gangs placed; other lines are skipped."""
    cycles: dict[int, Cycle] = {}
    gangs: list[Gang] = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("event") == "cycle":
            cycles[int(entry["cycle"])] = Cycle(stamp(entry), float(entry["seconds"]),
                                                float(entry.get("snapshot_seconds", 0.0)),
                                                int(entry.get("writes_in_flight", 0)),
                                                float(entry.get("gc_seconds", 0.0)),
                                                float(entry.get("gc_longest", 0.0)))
        elif entry.get("event") == "gang placed":
            gangs.append(Gang(str(entry.get("group", "")), stamp(entry),
                              int(entry.get("cycle", 0)),
                              float(entry.get("burst_seconds", math.nan))))
    return cycles, gangs


def quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[round(q * (len(ordered) - 1))]


def summary(cycles: dict[int, Cycle], gangs: Sequence[Gang]) -> list[str]:
    """Printable lines: the cycles' costs, then per-gang waits after the deciding cycle.
    A gang's cycle numbers are the log's (the "cycle" lines count from the same loop)."""
    known = [g for g in gangs if g.cycle in cycles and not math.isnan(g.burst_seconds)]
    waits = {
        "cycle end -> burst start": [g.placed - g.burst_seconds - cycles[g.cycle].ended
                                     for g in known],
        "burst": [g.burst_seconds for g in known],
        "cycle end -> last reply": [g.placed - cycles[g.cycle].ended for g in known],
    }
    lines = [f"{len(cycles)} cycles with writes; {len(known)} gangs placed; the garbage "
             f"collector paused {sum(c.gc_seconds for c in cycles.values()):.2f} s in all "
             "(from cycle lines)"]
    for name, values in (("cycle seconds", [c.seconds for c in cycles.values()]),
                         ("snapshot seconds", [c.snapshot_seconds for c in cycles.values()]),
                         ("writes in flight", [float(c.writes_in_flight)
                                               for c in cycles.values()]),
                         ("gc pauses between", [c.gc_seconds for c in cycles.values()]),
                         ("gc longest pause", [c.gc_longest for c in cycles.values()])):
        if values:
            lines.append(f"  {name:<26} mean {statistics.fmean(values):7.2f}  "
                         f"max {max(values):7.2f}")
    for name, values in waits.items():
        if values:
            lines.append(f"  {name:<26} p50 {quantile(values, 0.5):6.2f}  "
                         f"p90 {quantile(values, 0.9):6.2f}  p99 {quantile(values, 0.99):6.2f}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("log", type=Path)
    args = parser.parse_args(argv)
    with args.log.open() as lines:
        cycles, gangs = read_log(lines)
    print("\n".join(summary(cycles, gangs)))


if __name__ == "__main__":
    main()
