"""Cost of the operator's snapshot (cache -> core's Snapshot) at bench-5000's size.

    python -m bench.e2e.snapshot [--nodes 5000] [--workload bench/workloads/e2e-5000.yaml]
                             [--profile bench/results/snapshot-profile.txt]

The cache holds the objects bench-5000's backlog puts in the cluster (5,000 kwok Nodes,
1,700 PodGroups, 20,870 pending pods, as the API server returns them: uid,
resourceVersion, creationTimestamp). Timed, as CPU time of this process, like the
operator's loop takes them: the first snapshot (everything parsed), the next one with
nothing changed, one after a tenth of the pods were bound (a new resourceVersion each)
while another tenth are assumed on nodes, one after every pod was bound, and one more
with nothing changed (every pod on a node, as a busy cluster's are). `parses` counts
the objects parsed by each,
`gc` is the part of the CPU the garbage collector took (`CollectorTime`). Each snapshot
is assembled beside the one before, as the operator's cycles are (see `ClusterIndex`).
After each snapshot with nothing changed, its steps apart (least of 3): which run on the
operator's event loop and which in its worker thread; assembling is timed beside the
snapshot before and, for comparison, from scratch.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import math
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import ROOT
from bench.e2e.workload import (
    draw_gangs,
    layout_description,
    load_workload,
    pod_group_object,
    pod_object,
)
from phalanx.cluster.description import load_description, node_objects
from phalanx.config.settings import Mode
from phalanx.core.parse.objects import PARSERS
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.operator.assumed import AssumedPods
from phalanx.operator.cache import ClusterCache, Kind, WatchStore, object_key
from phalanx.operator.cache_snapshot import assemble, parse_view, parsed_objects, take_snapshot

WORKLOAD = ROOT / "bench" / "workloads" / "e2e-5000.yaml"


def cluster_objects(workload_path: Path, nodes: int | None) -> list[dict[str, Any]]:
    workload = load_workload(workload_path)
    template = load_description(ROOT / workload.cluster)
    description = layout_description(nodes, template) if nodes else template
    node_bodies = node_objects(description)
    gpus = sum(int(n["status"]["allocatable"]["nvidia.com/gpu"]) for n in node_bodies)
    objects: list[dict[str, Any]] = [*node_bodies]
    for gang in draw_gangs(workload, gpus):
        objects.append(pod_group_object(workload, gang))
        objects += [pod_object(workload, gang, name, "phalanx") for name in gang.pod_names()]
    for version, body in enumerate(objects, start=1):
        meta = body["metadata"]
        meta.update(uid=f"uid-{version}", resourceVersion=str(version),
                    creationTimestamp="2026-12-01T00:00:00Z")
        if body["kind"] == "Pod":
            body["status"] = {"phase": "Pending", "qosClass": "Burstable"}
    return objects


def counted(parses: list[int]) -> dict[str, Callable[[Any], object]]:
    def count(parse: Callable[[Any], object]) -> Callable[[Any], object]:
        def parse_counted(obj: Any) -> object:
            parses[0] += 1
            return parse(obj)
        return parse_counted
    return {kind: count(parse) for kind, parse in PARSERS.items()}


class CollectorTime:
    """CPU seconds the cyclic garbage collector took while this is in `gc.callbacks`. A
    full collection goes over every object alive (the cache's bodies, parsed forms and
    snapshots) and falls into whichever step allocated the object that set it off, so a
    snapshot's CPU is given with the collector's part."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def __enter__(self) -> CollectorTime:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.seconds += time.process_time() - self._started


def steps(cache: ClusterCache, assumed: AssumedPods, previous: ClusterIndex,
          repeat: int = 3) -> list[str]:
    """The operator's steps of a snapshot with nothing changed, least CPU of `repeat`:
    copying the stores and overlaying its own writes run on its event loop, parsing and
    assembling in a worker thread (see cache_snapshot.py)."""
    view = cache.view()
    parsed = parse_view(cache, view, Mode.BINDER)
    shown = parsed_objects(parsed, cache, assumed)
    work: list[tuple[str, Callable[[], object]]] = [
        ("  view of the stores (event loop)", cache.view),
        ("  parsing the view (thread)", lambda: parse_view(cache, view, Mode.BINDER)),
        ("  overlay of own writes (event loop)",
         lambda: parsed_objects(parsed, cache, assumed)),
        ("  assembling, with the index (thread)",
         lambda: assemble(shown, previous=previous).index),
        ("  the same from scratch (no previous index)", lambda: assemble(shown).index),
    ]
    lines = []
    for label, step in work:
        least = math.inf
        for _ in range(repeat):
            started = time.process_time()
            step()
            least = min(least, time.process_time() - started)
        lines.append(f"{label:<44} {least * 1000:8.0f} ms CPU")
    return lines


def bind(store: WatchStore, pods: list[str], nodes: list[str], start: int = 0) -> None:
    """`pods` bound and running (the watch brings a new version of each, as it stores
    it), the i-th on node `start + i` (round robin)."""
    for i, key in enumerate(pods, start=start):
        old = store[key][0]
        store[key] = ({**old, "spec": {**old["spec"], "nodeName": nodes[i % len(nodes)]},
                       "status": {**old["status"], "phase": "Running"},
                       "metadata": {**old["metadata"], "resourceVersion": f"b{i}"}},)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", type=Path, default=WORKLOAD)
    parser.add_argument("--nodes", type=int, default=None)
    parser.add_argument("--profile", type=Path, default=None,
                        help="write a cProfile summary of the three snapshots here")
    args = parser.parse_args(argv)
    objects = cluster_objects(args.workload, args.nodes)
    stores: dict[Kind, WatchStore] = {kind: WatchStore() for kind in Kind}
    for body in objects:  # as the watches keep them
        kind = Kind.NODE if body["kind"] == "Node" else (
            Kind.POD if body["kind"] == "Pod" else Kind.POD_GROUP)
        stores[kind][object_key(body)] = (body,)
    parses = [0]
    cache = ClusterCache(stores, counted(parses))
    assumed = AssumedPods(30)
    profile = cProfile.Profile() if args.profile else None
    lines: list[str] = []
    last: list[ClusterIndex] = []  # the snapshot before's index
    collector = CollectorTime()

    def say(line: str) -> None:
        print(line)
        lines.append(line)

    def timed(label: str) -> None:
        parses[0] = 0
        collected = collector.seconds
        started = time.process_time()
        if profile is not None:
            profile.enable()
        with collector:
            snapshot = take_snapshot(cache, assumed, Mode.BINDER,
                                     previous=last[-1] if last else None)
        if profile is not None:
            profile.disable()
        last[:] = [snapshot.index]
        cpu_ms = (time.process_time() - started) * 1000
        gc_ms = (collector.seconds - collected) * 1000
        say(f"{label:<44} {cpu_ms:8.0f} ms CPU ({gc_ms:4.0f} gc)  {parses[0]:6d} parses  "
            f"{len(snapshot.pods):6d} pods")

    pods = [str(key) for key in stores[Kind.POD]]
    nodes = [str(key) for key in stores[Kind.NODE]]
    say(f"{len(nodes)} nodes, {len(pods)} pods, {len(stores[Kind.POD_GROUP])} PodGroups")
    timed("first snapshot (everything parsed)")
    timed("next snapshot, nothing changed")
    for line in steps(cache, assumed, last[-1]):
        say(line)
    tenth = len(pods) // 10
    bind(stores[Kind.POD], pods[:tenth], nodes)
    for i, key in enumerate(pods[tenth:2 * tenth]):  # being bound by the operator
        assumed.assume(key, nodes[-1 - i % len(nodes)])
    timed("a tenth bound, a tenth assumed")
    bind(stores[Kind.POD], pods[tenth:], nodes, start=tenth)
    for key in pods[tenth:2 * tenth]:
        assumed.forget(key)
    timed("every pod bound")
    timed("next snapshot, nothing changed")
    for line in steps(cache, assumed, last[-1]):
        say(line)
    if profile is not None and args.profile is not None:
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(30)
        command = f"python -m bench.e2e.snapshot --profile {args.profile}"
        args.profile.write_text("\n".join([command, "", *lines, "", out.getvalue()]))


if __name__ == "__main__":
    main()
