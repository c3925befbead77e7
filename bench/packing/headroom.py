"""How much room the FGD paper's packing benchmark leaves above FGD, and where GPU stays free.

    python -m bench.packing.headroom                     # seed 1 of default, multigpu50,
                                                         # gpushare100 (minutes a trace)
    python -m bench.packing.headroom --traces default --seeds 1 2

For one arrival sequence (`bench.packing`'s, the same for every policy of a seed) it runs
the compared policies and reports, at the end of the sequence (130% arrived demand):

- **Where each policy's free GPU milli is**, device by device: the rest of a device holding
  an 810-milli pod (the trace's most frequent fraction, which leaves 190 that only pods
  of 190 or less can use) or another fraction above 500 milli, other partly used
  devices, whole free devices; and how much of each is on nodes whose cpu and memory no
  longer take any GPU pod of the sequence. With `--contents N`, also the N device contents
  (the fractions a device holds, largest first; `()` a whole free device) that hold the
  most free GPU, per policy: which pairings of fractions leave the rests.
- **An upper bound** for any policy that places every one of the first K arrivals, K being
  the first arrival that one of the compared policies could not place (so both of them
  satisfy it): each device holding one of the prefix's fractions above 500 milli keeps
  its rest free except what pods small enough for it can fill, counted generously
  (`fillable`: the sequence's every small fraction, split at will). Cpu and memory are
  not counted, so the true limit is lower.
- **A packing with hindsight**: FGD's own measure offered the whole sequence sorted by GPU
  request, largest first, free to leave any pod out. It shows that the bound above comes
  from the online obligation to place the early pods, not from the cluster.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from bench.packing.run import NODES, TRACES, trace_arrivals
from phalanx.sim.packing import (
    PackCluster,
    PackNode,
    PackPod,
    read_nodes,
    run_packing,
)
from phalanx.sim.packing.nodes import BoolArray
from phalanx.sim.packing.policies import POLICIES
from phalanx.sim.packing.policy import PackingPolicy, Placement
from phalanx.sim.packing.trace import DEVICE_MILLI

BIG = DEVICE_MILLI // 2
"""A fraction above this takes a device that no second such fraction can share."""
KINDS = ("beside 810", "beside another fraction > 500", "other partly used", "whole device")
EXHAUSTED = ", cpu/memory exhausted"
"""Suffix of a device whose node's free cpu and memory take no GPU pod of the sequence."""


class Recording:
    """A policy that remembers what the policy it wraps chose, and the cluster it saw."""

    def __init__(self, policy: PackingPolicy) -> None:
        self.policy = policy
        self.name = policy.name
        self.choices: list[Placement | None] = []
        self.cluster: PackCluster | None = None

    def choose(self, cluster: PackCluster, pod: PackPod) -> Placement | None:
        self.cluster = cluster
        where = self.policy.choose(cluster, pod)
        self.choices.append(where)
        return where


def fillable(rests: Iterable[int], sizes: Iterable[int]) -> int:
    """The most of the free `rests` (one per device) that pods of `sizes` can fill, a pod
    going only where it fits whole but counted as if it could be split among such
    devices: an upper bound on the real filling. Rests are filled smallest first: what
    fits a rest fits every larger one, so which of those pods a rest takes changes
    nothing for the rests after it, and the order is optimal for the split version."""
    room = Counter(rests)
    mass: Counter[int] = Counter()
    for size in sizes:
        mass[size] += size
    filled = 0
    for rest in sorted(room):
        need = rest * room[rest]
        for size in sorted(s for s in mass if s <= rest and mass[s]):
            take = min(need, mass[size])
            mass[size] -= take
            need -= take
            filled += take
            if not need:
                break
    return filled


def unavoidable_free(prefix: Sequence[PackPod], sequence: Sequence[PackPod]) -> int:
    """GPU milli left free by any policy that places every pod of `prefix` (the start of
    `sequence`): the rests of the devices its fractions above 500 milli take, less what
    the sequence's smaller fractions could at most fill there."""
    rests = [DEVICE_MILLI - p.gpu_milli for p in prefix if p.fractional and p.gpu_milli > BIG]
    small = [p.gpu_milli for p in sequence if p.fractional and p.gpu_milli <= BIG]
    return sum(rests) - fillable(rests, small)


@dataclass(slots=True)
class FreeSplit:
    """A final state's free GPU milli, by where it is."""

    total: int = 0
    parts: Counter[str] = field(default_factory=Counter)
    contents: Counter[tuple[int, ...]] = field(default_factory=Counter)
    """Free milli by what its device holds: the fractions on it, largest first."""


def usable_nodes(cluster: PackCluster, pods: Sequence[PackPod]) -> BoolArray:
    """Nodes whose free cpu and memory still take at least one GPU pod of `pods`."""
    shapes = np.array(sorted({(p.cpu_milli, p.memory_mib) for p in pods if p.gpus}))
    if not len(shapes):
        return np.zeros(len(cluster.nodes), dtype=np.bool_)
    fits = (cluster.cpu_free[:, None] >= shapes[None, :, 0]) & (
        cluster.mem_free[:, None] >= shapes[None, :, 1]
    )
    return np.asarray(fits.any(axis=1))


def split_free(
    cluster: PackCluster, sequence: Sequence[PackPod], choices: Sequence[Placement | None]
) -> FreeSplit:
    """Every device's free milli, named by the device (whole free; beside a fraction above
    500 milli; other partly used) and by its node (cpu and memory still take a GPU pod
    of the sequence, or not)."""
    beside: dict[tuple[int, int], int] = {}
    held: dict[tuple[int, int], list[int]] = {}
    for pod, where in zip(sequence, choices, strict=True):
        if where is not None and pod.fractional:
            held.setdefault((where[0], where[1][0]), []).append(pod.gpu_milli)
            if pod.gpu_milli > BIG:
                beside[where[0], where[1][0]] = pod.gpu_milli
    usable = usable_nodes(cluster, sequence)
    split = FreeSplit()
    for node, device in zip(*np.nonzero(cluster.dev_free > 0), strict=True):
        free = int(cluster.dev_free[node, device])
        if device >= cluster.gpus[node]:
            continue
        big = beside.get((int(node), int(device)), 0)
        if free == DEVICE_MILLI:
            kind = "whole device"
        elif big:
            kind = "beside 810" if big == 810 else "beside another fraction > 500"
        else:
            kind = "other partly used"
        note = "" if usable[node] else EXHAUSTED
        split.parts[kind + note] += free
        split.contents[tuple(sorted(held.get((int(node), int(device)), ()), reverse=True))] += free
        split.total += free
    return split


@dataclass(slots=True)
class Headroom:
    trace: str
    seed: int
    total: int
    prefix: int
    pods: int
    bound_free: int
    hindsight: int
    allocated: dict[str, int]
    free: dict[str, FreeSplit]


def headroom(
    trace: str, seed: int, nodes: Sequence[PackNode], policies: Sequence[str]
) -> Headroom:
    pods, sequence = trace_arrivals(trace, seed, nodes)
    total = sum(n.gpus for n in nodes) * DEVICE_MILLI
    allocated: dict[str, int] = {}
    free: dict[str, FreeSplit] = {}
    prefix = len(sequence)
    for name in policies:
        recording = Recording(POLICIES[name](pods))
        result = run_packing(recording, nodes, sequence, seed)
        assert recording.cluster is not None
        allocated[name] = result.allocated_gpu_milli
        free[name] = split_free(recording.cluster, sequence, recording.choices)
        first_miss = next((i for i, c in enumerate(recording.choices) if c is None), prefix)
        prefix = min(prefix, first_miss)
    ordered = sorted(sequence, key=lambda p: (-p.gpus, -p.gpu_milli, -p.cpu_milli))
    hindsight = run_packing(POLICIES["fgd"](pods), nodes, ordered, seed)
    return Headroom(
        trace=trace,
        seed=seed,
        total=total,
        prefix=prefix,
        pods=len(sequence),
        bound_free=unavoidable_free(sequence[:prefix], sequence),
        hindsight=hindsight.allocated_gpu_milli,
        allocated=allocated,
        free=free,
    )


def contents_table(found: Headroom, rows: int) -> list[str]:
    """The `rows` device contents holding the most free GPU (summed over the policies)."""
    names = list(found.free)
    every: Counter[tuple[int, ...]] = Counter()
    for name in names:
        every.update(found.free[name].contents)
    lines = [
        "| device holds | " + " | ".join(f"{n}: free GPUs (devices)" for n in names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for held, _ in sorted(every.items(), key=lambda item: (-item[1], item[0]))[:rows]:
        cells = " | ".join(
            f"{found.free[n].contents[held] / DEVICE_MILLI:.1f} "
            f"({found.free[n].contents[held] // (DEVICE_MILLI - sum(held))})"
            for n in names
        )
        lines.append(f"| {held} | {cells} |")
    return [*lines, ""]


def report(found: Headroom) -> list[str]:
    pct = 100.0 / found.total
    gpus = 1.0 / DEVICE_MILLI
    bound = 100.0 - found.bound_free * pct
    lines = [
        f"### {found.trace}, seed {found.seed}",
        "",
        f"- first {found.prefix:,} of {found.pods:,} arrivals placed by every policy below; "
        f"any policy that places them leaves >= {found.bound_free * gpus:.1f} GPUs free "
        f"beside fractions above 500 milli: allocation <= **{bound:.2f}%**",
        f"- with hindsight (FGD's measure, the arrivals sorted largest first, any pod left "
        f"out): {found.hindsight * pct:.2f}%",
    ]
    for name, milli in found.allocated.items():
        room = bound - milli * pct
        lines.append(f"- {name}: {milli * pct:.2f}% at the end, at most {room:.2f} pt below "
                     "the bound")
    names = list(found.free)
    lines += ["", "| free GPUs at the end (of which on nodes whose cpu/memory take no GPU pod) | "
              + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for kind in KINDS:
        cells = " | ".join(
            f"{(found.free[n].parts[kind] + found.free[n].parts[kind + EXHAUSTED]) * gpus:.1f} "
            f"({found.free[n].parts[kind + EXHAUSTED] * gpus:.1f})" for n in names
        )
        lines.append(f"| {kind} | {cells} |")
    cells = " | ".join(f"{found.free[n].total * gpus:.1f}" for n in names)
    lines += [f"| total | {cells} |", ""]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", nargs="+", default=list(TRACES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[1])
    parser.add_argument("--policies", nargs="+", default=["fgd", "phalanx"])
    parser.add_argument(
        "--contents",
        type=int,
        default=0,
        metavar="N",
        help="also the N device contents holding the most free GPU",
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    nodes = read_nodes(NODES)
    for trace in args.traces:
        for seed in args.seeds:
            found = headroom(trace, seed, nodes, args.policies)
            lines = report(found) + (contents_table(found, args.contents) if args.contents else [])
            print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
