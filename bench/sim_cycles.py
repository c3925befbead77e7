"""Each simulated cycle of one policy, as the core saw it: its CPU, its searches, its result.

    python -m bench.sim_cycles \\
        --cluster bench/data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv \\
        --trace bench/data/alibaba-gpu-v2023/openb_pod_list_default.csv --policy phalanx \\
        --load 1.3 --cycle-period 300 --seed 1 --out /tmp/sim

The arguments are `phalanx sim`'s (one policy), and the run is that command's, with the
core's `run_cycle` and the preemption `Finder.find` wrapped: per cycle, the CPU time of
`run_cycle` (`time.process_time`, as the simulator's `scheduler_seconds`), the searches
for room to evict or reserve, the groups waiting on a starvation reservation (their
message says nodes are reserved for them), and a hash of the whole result (bindings,
evictions, releases, every group decision and message). Two commits give the same
decisions when their "decisions digest" lines are equal: that is how speed-ups of the core
are shown to change nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from phalanx.cli import sim as sim_cli
from phalanx.core.preemption.find import Finder
from phalanx.core.result import CycleResult
from phalanx.sim.policies import core_policy

RESERVED = "are reserved for it"  # the wait message of a group holding a reservation


@dataclass
class CycleRecord:
    cpu_seconds: float
    searches: int
    reserved: int
    digest: str


@dataclass
class Recorder:
    cycles: list[CycleRecord] = field(default_factory=list)
    searches: int = 0

    def run_cycle(self, run: Callable[..., CycleResult]) -> Callable[..., CycleResult]:
        def wrapped(*args: Any, **kwargs: Any) -> CycleResult:
            self.searches = 0
            started = time.process_time()
            result = run(*args, **kwargs)
            cpu = time.process_time() - started
            reserved = sum(1 for d in result.groups if RESERVED in d.message)
            digest = hashlib.sha256(repr(result).encode()).hexdigest()
            self.cycles.append(CycleRecord(cpu, self.searches, reserved, digest))
            return result
        return wrapped

    def find(self, find: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self.searches += 1
            return find(*args, **kwargs)
        return wrapped


def report(cycles: list[CycleRecord]) -> list[str]:
    """A line per cycle, then the quantiles and the digest of all results in order."""
    lines = [f"{'cycle':>5} {'cpu s':>7} {'searches':>8} {'reserved':>8}  result"]
    for number, cycle in enumerate(cycles, 1):
        lines.append(f"{number:5d} {cycle.cpu_seconds:7.3f} {cycle.searches:8d} "
                     f"{cycle.reserved:8d}  {cycle.digest[:12]}")
    cpu = sorted(c.cpu_seconds for c in cycles)
    if cpu:
        at = lambda q: cpu[round(q * (len(cpu) - 1))]  # noqa: E731
        lines.append(f"cpu per cycle p50 {at(0.5):.3f} s, p95 {at(0.95):.3f} s, "
                     f"max {cpu[-1]:.3f} s; searches {sum(c.searches for c in cycles)}; "
                     f"cycles with a reservation held {sum(1 for c in cycles if c.reserved)}")
    whole = hashlib.sha256("".join(c.digest for c in cycles).encode()).hexdigest()
    lines.append(f"decisions digest {whole}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    sim_cli.add_arguments(parser)
    args = parser.parse_args(argv)
    if args.policy == "all":
        print("one policy at a time (its cycles are recorded)", file=sys.stderr)
        return 2
    recorder = Recorder()
    core_policy.run_cycle = recorder.run_cycle(core_policy.run_cycle)  # type: ignore[assignment]
    Finder.find = recorder.find(Finder.find)  # type: ignore[method-assign]
    code = sim_cli.run(args)
    print("\n".join(report(recorder.cycles)))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
