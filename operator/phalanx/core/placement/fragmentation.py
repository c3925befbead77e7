"""How much of a node's free GPU the workload could no longer use: FGD's measure, extended.

Weng et al. (ATC'23) score a placement by the change in a node's expected fragmentation:
for each typical pod shape of the workload (weighted by its share), the free GPU milli that
such a pod could not use there (all of it if the pod does not fit at all, else the free
milli of devices too small for it). Here the typical shapes are learned online from the
pods the core sees (`ShapeMix`: a window of recent GPU pods, the most frequent shapes
covering 95% of them), and a shape fits only with its cpu AND memory, so a placement that
takes the last cpu or memory of a node whose GPUs are still free counts those GPUs as lost
(FGD counts cpu only). CPU-only shapes are left out: they use no GPU.

A fractional shape, moreover, can use no more of a node's free GPU than the pods of it
that the node's cpu and memory still take: FGD asks only whether one such pod
fits, so a node with 8 free GPUs and cpu for two pods of 100 milli counted all 8 GPUs
usable by them. Many small pods share a device, so for them cpu runs out before the
devices do; at 130% of the GPU demand of the Alibaba trace about as much cpu arrives as
the cluster has (106% on `default`, 118% on `gpushare100`). Counting it raised allocation
on the FGD paper's benchmark by about 0.3 pt on each published trace (`python -m
bench.packing`, seeds 1-5, bench/README.md).

Whole-GPU shapes are capped the same way (a node's free GPUs beyond the pods its cpu and
memory still take count as lost) only while no typical shape shares a device. On the
whole-GPU versions of the traces that took allocation from 98.71/98.42% to 100.00% on
`default-whole` (seeds 1-2): cpu-only and cpu-heavy pods no longer leave whole GPUs beside
too little cpu. Beside fractional shapes it lost: 0.43 pt on `default` and 0.32 on
`multigpu50` (0.15 and 0.10 at half weight). Measured, not explained; a likely part of it
is that a fraction placed on a node whose whole GPUs its cpu-heavy whole pods could not
all use reads as a gain, so fractions are drawn to cpu-poor nodes.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate

from phalanx.core.model.device_share import DEVICE
from phalanx.core.model.inputs import PodInfo
from phalanx.core.model.names import CPU, MEMORY
from phalanx.core.snapshot.devices import whole_devices

WINDOW = 4096  # recent GPU pods the shares are learned from
COVERAGE = 0.95  # the typical shapes cover this share of them
MAX_SHAPES = 64
_REFRESH = 64  # new pods seen before the typical shapes are recomputed


@dataclass(frozen=True, slots=True, order=True)
class Profile:
    """A GPU pod shape as fragmentation sees it: `count` devices of `milli` each."""

    cpu: int
    milli: int
    count: int
    memory: int = 0


def profile_of(pod: PodInfo) -> tuple[int, int, int, int] | None:
    """A GPU pod's shape as fragmentation sees it: (cpu, milli, count, memory), `count`
    devices of `milli` each (a plain tuple: a ShapeMix built from every pod of a snapshot
    makes no object per pod). None for a pod that uses no GPU (or asks for GPU memory:
    its part depends on the node, so it is no typical shape)."""
    requests = pod.requests
    if pod.gpu_milli:
        return (requests.get(CPU, 0), pod.gpu_milli, 1, requests.get(MEMORY, 0))
    whole = whole_devices(pod)
    if not whole:
        return None
    return (requests.get(CPU, 0), DEVICE, whole, requests.get(MEMORY, 0))


class ShapeMix:
    """The typical GPU pod shapes of the recent workload and their shares. Shapes differ
    by cpu, part of a device and devices; memory, which varies from pod to pod, is the
    smallest seen for the shape (a node with less memory takes none of them)."""

    def __init__(self, pods: Iterable[PodInfo] = (), window: int = WINDOW) -> None:
        """The same as observing `pods` one by one, in one pass (a cycle builds it from
        every pod of its snapshot). The window holds one tuple per distinct shape, shared
        by its pods: a tuple kept per pod, for 10,000 pods a cycle, was work for the
        garbage collector."""
        memory: dict[tuple[int, int, int], int] = {}
        shapes: dict[tuple[int, int, int], tuple[int, int, int]] = {}
        seen: list[tuple[int, int, int]] = []
        for found in map(profile_of, pods):
            if found is None:
                continue
            key = shapes.setdefault(found[:3], found[:3])
            seen.append(key)
            least = found[3]
            if least < memory.get(key, least + 1):
                memory[key] = least
        recent = seen[-window:]
        self._recent: deque[tuple[int, int, int]] = deque(recent, maxlen=window)
        self._counts: Counter[tuple[int, int, int]] = Counter(recent)
        self._memory = memory
        self._typical: tuple[tuple[Profile, float], ...] = ()
        self._stale = 0
        self.version = 0
        """Counts refreshes of the typical shapes: a grade remembered under another
        version is stale (`CycleState.node_grades`)."""
        self._memo: dict[tuple[int, int, tuple[int, ...]], float] = {}
        self._rows: tuple[tuple[int, int, int, int, float, bool], ...] = ()
        """The typical shapes as `fragmentation` reads them (`_rows`)."""
        self._shares = True  # `shares_devices`, as of the last refresh
        self.least = (0, 0)
        """The least cpu and the least memory that any typical shape asks for (as of the
        last refresh): a node with less of either left takes none of the pods that keep
        arriving, so `phalanx.core.placement.node_choice` keeps pods from leaving GPU milli on such
        a node. Rare shapes are left out: counting them (the least cpu of any GPU pod in
        the window, 1 core on the Alibaba trace) let pods leave whole GPUs beside one or
        two cores that only pods which never came again could use (`python -m
        bench.packing.losses`); against the typical shapes, allocation at 130% on the
        FGD paper's benchmark went up 0.70 pt on `default-whole` and 0.25 on
        `multigpu50-whole`, within the seeds' noise on the three published traces
        (bench/README.md)."""
        self._refresh()

    def observe(self, pod: PodInfo) -> None:
        found = profile_of(pod)
        if found is None:
            return
        cpu, milli, count, memory = found
        recent = self._recent
        if recent.maxlen is not None and len(recent) == recent.maxlen:
            old = recent[0]
            self._counts[old] -= 1
            if not self._counts[old]:
                del self._counts[old]
        key = (cpu, milli, count)
        recent.append(key)
        self._counts[key] += 1
        least = self._memory.get(key)
        if least is None or memory < least:
            self._memory[key] = memory
        self._stale += 1

    def typical(self) -> tuple[tuple[Profile, float], ...]:
        if self._stale >= _REFRESH or (self._stale and not self._typical):
            self._refresh()
        return self._typical

    def shares_devices(self) -> bool:
        """Whether some typical shape shares a device. While none does, whole-GPU shapes
        are capped by the pods a node's cpu and memory take (the module's docstring);
        while one does, a lone pod of one GPU is graded on a wider window
        (`phalanx.core.placement.node_choice.ONE_GPU_CANDIDATES`)."""
        self.typical()
        return self._shares

    def _refresh(self) -> None:
        self._stale = 0
        self.version += 1
        total = sum(self._counts.values())
        ranked = sorted(self._counts.items(), key=lambda item: (-item[1], item[0]))
        chosen: list[tuple[Profile, int]] = []
        covered = 0
        for (cpu, milli, count), seen in ranked:
            if covered >= COVERAGE * total or len(chosen) == MAX_SHAPES:
                break
            memory = self._memory[cpu, milli, count]
            chosen.append((Profile(cpu, milli, count, memory), seen))
            covered += seen
        self._typical = tuple((profile, seen / covered) for profile, seen in chosen)
        self._shares = any(p.milli < DEVICE for p, _ in self._typical)
        self._rows = _rows(self._typical, self._shares)
        self._memo = {}
        self.least = (
            min((profile.cpu for profile, _ in self._typical), default=0),
            min((profile.memory for profile, _ in self._typical), default=0),
        )

    def fragmentation(self, cpu_free: int, memory_free: int, free: Sequence[int]) -> float:
        """Expected free GPU milli of a node (free milli per device `free`) that the typical
        shapes could not use, remembered by the node's free cpu, memory and devices (the
        pods of a shape that a node hosts depend on its exact cpu and memory)."""
        return self.sorted_fragmentation(cpu_free, memory_free, tuple(sorted(free)))

    def sorted_fragmentation(
        self, cpu_free: int, memory_free: int, ordered: tuple[int, ...]
    ) -> float:
        """`fragmentation` of free milli per device already in ascending order: the grading
        of a node keeps its devices sorted once per device state, not once per pod size
        (`phalanx.core.placement.node_choice`), and two thirds of its calls are answered
        from the memo, where sorting was most of the cost."""
        if not self.typical() or not any(ordered):
            return 0.0
        key = (cpu_free, memory_free, ordered)
        known = self._memo.get(key)
        if known is not None:
            return known
        # For a shape of `milli` per device, the devices it can use are those from
        # `bisect_left(ordered, milli)` on, and `below[cut]` is the free milli of the
        # others: a bisection per shape, not a pass over the devices (the same integers,
        # so the same sum in the same order).
        below = list(accumulate(ordered, initial=0))
        total, devices = below[-1], len(ordered)
        amount = 0.0
        for cpu, memory, milli, count, share, capped in self._rows:
            if cpu_free >= cpu and memory_free >= memory:
                cut = bisect_left(ordered, milli)
                if devices - cut >= count:
                    small = below[cut]
                    if capped:  # the milli its pods that still fit can use (`_rows`)
                        pods = cpu_free // cpu if cpu > 0 else memory_free // memory
                        if cpu > 0 and memory > 0 and memory_free // memory < pods:
                            pods = memory_free // memory
                        amount += share * (total - min(total - small, pods * milli * count))
                    else:
                        amount += share * small
                    continue
            amount += share * total
        self._memo[key] = amount
        return amount


def _rows(
    typical: tuple[tuple[Profile, float], ...], shares: bool
) -> tuple[tuple[int, int, int, int, float, bool], ...]:
    """(cpu, memory, milli, count, share, capped) per typical shape, in order: plain
    tuples unpacked in `ShapeMix.fragmentation`'s loop, which runs for every candidate
    node whose grade is not known (~5,000 times over ~32 shapes in an early Alibaba
    simulator cycle of 300 pods); reading a `Profile`'s fields and a call per shape
    there was a third of that loop. `capped`: the shape can use no more of the node's
    free GPU milli than its pods that the node's cpu and memory still take (the module's
    docstring); a shape that asks neither cpu nor memory is never capped."""
    return tuple(
        (
            p.cpu, p.memory, p.milli, p.count, share,
            (p.milli < DEVICE or not shares) and (p.cpu > 0 or p.memory > 0),
        )
        for p, share in typical
    )
