"""Where the operator's first cycle goes at bench-5000's size, and when its first write leaves.

    python -m bench.e2e.first_cycle [--nodes 5000] [--workload bench/workloads/e2e-5000.yaml]
                                [--profile bench/results/first-cycle-profile.txt]

bench-5000's backlog as the operator finds it once its caches are listed (5,000 kwok
Nodes, the `default` NetworkTopology and Queue, 1,700 PodGroups, 20,870 pending pods, as
`bench.e2e.snapshot` builds them), run through the operator's own `Scheduler.cycle` with an
API that answers every request at once (no cluster: the shell's own cost, not the API
server's). Printed, in CPU and wall seconds: the parsing the operator does while its
LISTs arrive (Pods, PodGroups and Nodes, page by page; `--no-warm` leaves it to the
cycle, as before), then from the cycle's start the snapshot (parsing and assembling, in
worker threads), the core's `run_cycle`, the rest of the cycle (assuming the gangs,
composing the statuses), and when the first PodGroup status and the first binding were
sent. With `--profile`, a cProfile summary of
the cycle.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from bench.common import ROOT
from bench.e2e.snapshot import WORKLOAD, cluster_objects
from phalanx.cluster.description import load_description, network_topology
from phalanx.config import Settings
from phalanx.config.settings import Mode
from phalanx.core.model.names import DEFAULT_QUEUE, GROUP_VERSION
from phalanx.observe.frozen_heap import FrozenHeap
from phalanx.operator import scheduler as scheduler_module
from phalanx.operator.cache import ClusterCache, Kind
from phalanx.operator.kube.client import JSON, Reply
from phalanx.operator.scheduler import Scheduler

T = TypeVar("T")


class AnsweringApi:
    """Answers every request at once and notes when the first of each kind was sent."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.first: dict[str, float] = {}
        self.requests = 0

    async def request(self, method: str, path: str, body: Any = None,
                      content_type: str = JSON) -> Reply:
        kind = "binding" if path.endswith("/binding") else (
            "podgroup status" if "/podgroups/" in path else f"{method} other")
        self.first.setdefault(kind, time.perf_counter() - self.started)
        self.requests += 1
        await asyncio.sleep(0)
        return Reply(201 if method == "POST" else 200, {})


class Phases:
    """Wall and CPU seconds spent in the functions the cycle calls, by name."""

    def __init__(self) -> None:
        self.seconds: dict[str, tuple[float, float]] = {}

    def wrap(self, name: str, function: Callable[..., T]) -> Callable[..., T]:
        def timed(*args: Any, **kwargs: Any) -> T:
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent = self.seconds.get(name, (0.0, 0.0))
                self.seconds[name] = (spent[0] + time.perf_counter() - wall,
                                      spent[1] + time.process_time() - cpu)
        return timed


def objects_of(workload: Path, nodes: int | None) -> list[dict[str, Any]]:
    found = cluster_objects(workload, nodes)
    from bench.e2e.workload import load_workload

    description = load_description(ROOT / load_workload(workload).cluster)
    queue = {"apiVersion": GROUP_VERSION, "kind": "Queue", "metadata": {
        "name": DEFAULT_QUEUE, "uid": "uid-queue", "resourceVersion": "1"}, "spec": {"weight": 1}}
    return [*found, network_topology(description), queue]


async def first_cycle(cache: ClusterCache, profile: cProfile.Profile | None,
                      say: Callable[[str], None]) -> None:
    phases = Phases()
    scheduler_module.parse_view = phases.wrap("snapshot: parsing (thread)",
                                              scheduler_module.parse_view)
    scheduler_module.assemble = phases.wrap("snapshot: assembling (thread)",
                                            scheduler_module.assemble)
    scheduler_module.run_cycle = phases.wrap("run_cycle (the core)", scheduler_module.run_cycle)
    started = time.perf_counter()
    api = AnsweringApi(started)
    # the operator's collector settings and frozen heap (frozen_heap.py), as main.py has them
    heap = FrozenHeap(time.monotonic)
    scheduler = Scheduler(cache, api, Settings(mode=Mode.BINDER), heap=heap)
    cpu = time.process_time()
    if profile is not None:
        profile.enable()
    result = await scheduler.cycle()
    if profile is not None:
        profile.disable()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    settled = scheduler.settle()
    await settled
    done = time.perf_counter() - started
    say(f"{len(result.groups)} groups decided, {len(result.bindings)} pods to bind")
    for name, (phase_wall, phase_cpu) in phases.seconds.items():
        say(f"  {name:<40} {phase_wall:7.2f} s wall {phase_cpu:7.2f} s CPU")
    rest_wall = wall - sum(w for w, _ in phases.seconds.values())
    rest_cpu = cpu - sum(c for _, c in phases.seconds.values())
    say(f"  {'the rest of the cycle':<40} {rest_wall:7.2f} s wall {rest_cpu:7.2f} s CPU")
    say(f"  {'the whole cycle':<40} {wall:7.2f} s wall {cpu:7.2f} s CPU")
    for kind, at in sorted(api.first.items(), key=lambda item: item[1]):
        say(f"first {kind} sent after {at:.2f} s")
    say(f"{api.requests} requests, all answered {done:.2f} s after the cycle's start")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", type=Path, default=WORKLOAD)
    parser.add_argument("--nodes", type=int, default=None)
    parser.add_argument("--profile", type=Path, default=None,
                        help="write a cProfile summary of the cycle here")
    parser.add_argument("--no-warm", dest="warm", action="store_false",
                        help="do not parse while listing: the first snapshot parses all")
    args = parser.parse_args(argv)
    cache = ClusterCache.from_objects(objects_of(args.workload, args.nodes))
    profile = cProfile.Profile() if args.profile else None
    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    if args.warm:
        wall, cpu = time.perf_counter(), time.process_time()
        for kind in (Kind.NODE, Kind.POD_GROUP, Kind.POD):
            cache.warm(kind, list(cache.objects(kind)))
        say(f"parsed as listed (before the cycle) {time.perf_counter() - wall:7.2f} s wall "
            f"{time.process_time() - cpu:7.2f} s CPU")

    asyncio.run(first_cycle(cache, profile, say))
    if profile is not None and args.profile is not None:
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(40)
        command = "python -m bench.e2e.first_cycle " + " ".join(argv or sys.argv[1:])
        args.profile.write_text("\n".join([command, "", *lines, "", out.getvalue()]))


if __name__ == "__main__":
    main()
