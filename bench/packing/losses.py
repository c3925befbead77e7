"""Where the FGD paper's packing benchmark loses GPU: why arrivals fail, and why the GPU
left free at 130% arrived demand is of no use to them.

    python -m bench.packing.losses                          # seed 1 of default,
                                                            # multigpu50, gpushare100
    python -m bench.packing.losses --traces default-whole --seeds 1 2 --policies fgd phalanx

For one arrival sequence (`bench.packing`'s, the same for every policy of a seed) each
policy runs as in `bench.packing`; this reports:

- **Why arrivals failed**, by kind of pod (CPU-only, fractional, whole GPUs): no node of
  an accepted GPU model has the devices for it at all (`devices`: a free device with room
  for a fraction, or as many fully free devices as the pod asks for), or some do but none
  of them has the cpu (`cpu`), the memory (`memory`), either (`cpu and memory`) or both
  (`cpu or memory`: some have the cpu, others the memory) left.
- **The free GPU milli at the end, device by device**, by what could still use it, from
  the GPU pod shapes of the sequence (cpu, memory, part of a device, devices): `usable`
  (some shape fits the device and the node's cpu and memory: pods never leave, so only
  shapes none of whose pods failed, rare small ones); `rest too small` (no
  shape's part fits what the device has free, whatever the node's cpu: a sliver); `node
  exhausted` (the device has room for some shape but the node's cpu and memory take no
  GPU shape at all); `node too small` (the node's cpu and memory take some GPU shapes,
  but not the ones whose part fits the device). Each is split into whole free devices
  and rests of partly used ones.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from bench.packing.headroom import Recording
from bench.packing.run import NODES, TRACES, trace_arrivals
from phalanx.sim.packing import (
    PackCluster,
    PackNode,
    PackPod,
    read_nodes,
    run_packing,
)
from phalanx.sim.packing.policies import POLICIES
from phalanx.sim.packing.policy import PackingPolicy, Placement
from phalanx.sim.packing.run import kind_of
from phalanx.sim.packing.trace import DEVICE_MILLI

CLASSES = ("usable", "rest too small", "node exhausted", "node too small")


def failure_reason(cluster: PackCluster, pod: PackPod) -> str:
    """Why no node takes `pod` (`feasible` is empty): what the nodes with its devices lack."""
    if pod.gpus == 0:
        room = np.ones(len(cluster.nodes), dtype=np.bool_)
    elif pod.fractional:
        room = cluster.allowed(pod.models) & np.any(cluster.dev_free >= pod.gpu_milli, axis=1)
    else:
        room = cluster.allowed(pod.models) & (cluster.full_devices() >= pod.gpus)
    if not room.any():
        return "devices"
    cpu = bool((cluster.cpu_free[room] >= pod.cpu_milli).any())
    memory = bool((cluster.mem_free[room] >= pod.memory_mib).any())
    if cpu and memory:
        return "cpu or memory"  # some nodes have the cpu, others the memory, none both
    return "cpu" if memory else "memory" if cpu else "cpu and memory"


class Watching(Recording):
    """A policy that also records why each pod it could not place failed."""

    def __init__(self, policy: PackingPolicy) -> None:
        super().__init__(policy)
        self.failures: Counter[tuple[str, str]] = Counter()

    def choose(self, cluster: PackCluster, pod: PackPod) -> Placement | None:
        where = super().choose(cluster, pod)
        if where is None:
            self.failures[kind_of(pod), failure_reason(cluster, pod)] += 1
        return where


@dataclass(frozen=True, slots=True)
class GpuShape:
    cpu: int
    memory: int
    milli: int
    count: int


def gpu_shapes(sequence: Sequence[PackPod]) -> list[GpuShape]:
    found = {GpuShape(p.cpu_milli, p.memory_mib, p.gpu_milli, p.gpus) for p in sequence if p.gpus}
    return sorted(found, key=lambda s: (s.cpu, s.memory, s.milli, s.count))


def free_classes(cluster: PackCluster, shapes: Sequence[GpuShape]) -> Counter[str]:
    """Every device's free milli by `CLASSES`, with " (whole)" or " (rest)" after it."""
    cpu = np.array([s.cpu for s in shapes])
    memory = np.array([s.memory for s in shapes])
    milli = np.array([s.milli for s in shapes])
    count = np.array([s.count for s in shapes])
    whole = np.array([s.milli == DEVICE_MILLI for s in shapes])
    full = cluster.full_devices()
    split: Counter[str] = Counter()
    for node in range(len(cluster.nodes)):
        gpus = int(cluster.gpus[node])
        frees = [int(f) for f in cluster.dev_free[node, :gpus] if f > 0]
        if not frees:
            continue
        by_node = (cpu <= cluster.cpu_free[node]) & (memory <= cluster.mem_free[node])
        for free in frees:
            by_device = np.where(whole, (free == DEVICE_MILLI) & (count <= full[node]),
                                 milli <= free)
            if (by_device & by_node).any():
                kind = CLASSES[0]
            elif not by_device.any():
                kind = CLASSES[1]
            elif not by_node.any():
                kind = CLASSES[2]
            else:
                kind = CLASSES[3]
            split[f"{kind} ({'whole' if free == DEVICE_MILLI else 'rest'})"] += free
    return split


@dataclass(slots=True)
class Losses:
    trace: str
    seed: int
    total: int
    allocated: dict[str, int] = field(default_factory=dict)
    failures: dict[str, Counter[tuple[str, str]]] = field(default_factory=dict)
    free: dict[str, Counter[str]] = field(default_factory=dict)


def losses(trace: str, seed: int, nodes: Sequence[PackNode], policies: Sequence[str]) -> Losses:
    pods, sequence = trace_arrivals(trace, seed, nodes)
    total = sum(n.gpus for n in nodes) * DEVICE_MILLI
    shapes = gpu_shapes(sequence)
    found = Losses(trace, seed, total)
    for name in policies:
        watching = Watching(POLICIES[name](pods))
        result = run_packing(watching, nodes, sequence, seed)
        assert watching.cluster is not None
        found.allocated[name] = result.allocated_gpu_milli
        found.failures[name] = watching.failures
        found.free[name] = free_classes(watching.cluster, shapes)
    return found


def report(found: Losses) -> list[str]:
    names = list(found.allocated)
    gpus = 1.0 / DEVICE_MILLI
    lines = [f"### {found.trace}, seed {found.seed}", ""]
    for name in names:
        lines.append(f"- {name}: {100.0 * found.allocated[name] / found.total:.2f}% at the end")
    keys = sorted({k for n in names for k in found.failures[n]})
    lines += ["", "| failed arrivals: kind, what the nodes with its devices lack | "
              + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for kind, reason in keys:
        cells = " | ".join(str(found.failures[n][kind, reason]) for n in names)
        lines.append(f"| {kind}, {reason} | {cells} |")
    lines += ["", "| free GPUs at the end | " + " | ".join(names) + " |",
              "|---|" + "---:|" * len(names)]
    for kind in CLASSES:
        for part in ("whole", "rest"):
            key = f"{kind} ({part})"
            cells = " | ".join(f"{found.free[n][key] * gpus:.1f}" for n in names)
            lines.append(f"| {key} | {cells} |")
    cells = " | ".join(f"{sum(found.free[n].values()) * gpus:.1f}" for n in names)
    return [*lines, f"| total | {cells} |", ""]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", nargs="+", default=list(TRACES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[1])
    parser.add_argument("--policies", nargs="+", default=["fgd", "phalanx"])
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    nodes = read_nodes(NODES)
    for trace in args.traces:
        for seed in args.seeds:
            print("\n".join(report(losses(trace, seed, nodes, args.policies))), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
