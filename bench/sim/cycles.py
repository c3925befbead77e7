"""Each simulated cycle of one policy, as the core saw it: its CPU, its searches, its result.

    python -m bench.sim.cycles \\
        --cluster bench/data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv \\
        --trace bench/data/alibaba-gpu-v2023/openb_pod_list_default.csv --policy phalanx \\
        --load 1.3 --cycle-period 300 --seed 1 --out /tmp/sim

The arguments are `phalanx sim`'s (one policy), and the run is that command's, with the
core's `run_cycle` and the preemption `Finder.find` wrapped: per cycle, the CPU time of
`run_cycle` (`time.process_time`, as the simulator's `scheduler_seconds`) and the part of it
the garbage collector took (`gc.callbacks`: a collection falls into whichever cycle
allocates the object that sets it off), the searches
for room to evict or reserve, the groups waiting on a starvation reservation (their
message says nodes are reserved for them), and a hash of the whole result (bindings,
evictions, releases, every group decision and message). Two commits give the same
decisions when their "decisions digest" lines are equal: that is how speed-ups of the core
are shown to change nothing. `--profile-cycle N` runs cycle N under cProfile and writes its
statistics to `--profile-out` (that cycle's CPU figure then includes the profiler's cost;
its result, and so the digest, are unchanged).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import io
import pstats
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from phalanx.cli import sim as sim_cli
from phalanx.core.model.result import CycleResult
from phalanx.core.preemption.find import Finder
from phalanx.observe.gc_pauses import GcPauses
from phalanx.sim.policies import core_policy

RESERVED = "are reserved for it"  # the wait message of a group holding a reservation


@dataclass
class CycleRecord:
    cpu_seconds: float
    searches: int
    reserved: int
    digest: str
    gc_seconds: float = 0.0  # of `cpu_seconds`: the collector's pauses inside the cycle


@dataclass
class Recorder:
    cycles: list[CycleRecord] = field(default_factory=list)
    searches: int = 0
    profile_cycle: int = 0  # the cycle (numbered from 1) to run under cProfile, 0: none
    profile: pstats.Stats | None = None
    pauses: GcPauses = field(default_factory=lambda: GcPauses(time.process_time))

    def run_cycle(self, run: Callable[..., CycleResult]) -> Callable[..., CycleResult]:
        def wrapped(*args: Any, **kwargs: Any) -> CycleResult:
            self.searches = 0
            profiler = cProfile.Profile() if len(self.cycles) + 1 == self.profile_cycle else None
            self.pauses.since()
            started = time.process_time()
            if profiler is not None:
                result = profiler.runcall(run, *args, **kwargs)
                self.profile = pstats.Stats(profiler)
            else:
                result = run(*args, **kwargs)
            cpu = time.process_time() - started
            collected = self.pauses.since().seconds
            reserved = sum(1 for d in result.groups if RESERVED in d.message)
            digest = hashlib.sha256(repr(result).encode()).hexdigest()
            self.cycles.append(CycleRecord(cpu, self.searches, reserved, digest, collected))
            return result
        return wrapped

    def find(self, find: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self.searches += 1
            return find(*args, **kwargs)
        return wrapped


def report(cycles: list[CycleRecord]) -> list[str]:
    """A line per cycle, then the quantiles and the digest of all results in order."""
    lines = [f"{'cycle':>5} {'cpu s':>7} {'gc s':>6} {'searches':>8} {'reserved':>8}  result"]
    for number, cycle in enumerate(cycles, 1):
        lines.append(f"{number:5d} {cycle.cpu_seconds:7.3f} {cycle.gc_seconds:6.3f} "
                     f"{cycle.searches:8d} "
                     f"{cycle.reserved:8d}  {cycle.digest[:12]}")
    cpu = sorted(c.cpu_seconds for c in cycles)
    if cpu:
        at = lambda q: cpu[round(q * (len(cpu) - 1))]  # noqa: E731
        lines.append(f"cpu per cycle p50 {at(0.5):.3f} s, p95 {at(0.95):.3f} s, "
                     f"max {cpu[-1]:.3f} s; gc {sum(c.gc_seconds for c in cycles):.3f} s in all; "
                     f"searches {sum(c.searches for c in cycles)}; "
                     f"cycles with a reservation held {sum(1 for c in cycles if c.reserved)}")
    whole = hashlib.sha256("".join(c.digest for c in cycles).encode()).hexdigest()
    lines.append(f"decisions digest {whole}")
    return lines


def profile_text(stats: pstats.Stats, header: str, rows: int = 60) -> str:
    """The profile by cumulative, then by own time, under a header naming the run."""
    out = io.StringIO()
    out.write(header + "\n")
    for order in ("cumulative", "tottime"):
        stats.stream = out  # type: ignore[attr-defined]
        stats.sort_stats(order).print_stats(rows)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    sim_cli.add_arguments(parser)
    parser.add_argument("--profile-cycle", type=int, default=0,
                        help="run this cycle (numbered from 1) under cProfile")
    parser.add_argument("--profile-out", default="",
                        help="where to write that cycle's profile (default: stdout)")
    args = parser.parse_args(argv)
    if args.policy == "all":
        print("one policy at a time (its cycles are recorded)", file=sys.stderr)
        return 2
    recorder = Recorder(profile_cycle=args.profile_cycle)
    gc.callbacks.append(recorder.pauses)
    core_policy.run_cycle = recorder.run_cycle(core_policy.run_cycle)  # type: ignore[assignment]
    Finder.find = recorder.find(Finder.find)  # type: ignore[method-assign]
    code = sim_cli.run(args)
    print("\n".join(report(recorder.cycles)))
    if recorder.profile is not None:
        command = " ".join(argv if argv is not None else sys.argv[1:])
        header = f"cycle {args.profile_cycle} of: python -m bench.sim.cycles {command}"
        text = profile_text(recorder.profile, header)
        if args.profile_out:
            with open(args.profile_out, "w") as out:
                out.write(text)
        else:
            print(text)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
