"""Which node takes one pod: the one it fragments least, first-fit among equals.

For a single pod the placement hands over the `CANDIDATES` first nodes by position of a
domain that take it (a first-fit window, wider for a pod of whole GPUs: `candidates`). A
node where the pod would leave GPU milli with too little cpu or memory for any typical
GPU pod comes last (`strands`). The others are graded by how much GPU the workload's
typical shapes could no longer use there after the pod lands, its devices chosen as
`device_choice` chooses them (`phalanx.core.placement.fragmentation`), quantised like FGD's integer
score (changes within ~40 milli of a GPU count as equal) but rounded, not truncated, so
that "nothing lost" sits in the middle of its step (see `grade`). Among equal grades a
GPU pod keeps off nodes with every GPU free (whole nodes stay free for gangs), a CPU-only
pod goes to a node without GPUs (there it strands nothing), and then the lowest position
wins, a fixed order, so the choice is a function of the cluster state alone. The grade
comes first: on the FGD paper's benchmark, opening a whole node only when no partly used
node takes the pod at all cost 0.3-0.6 pt of allocation (`python -m bench.packing`,
bench/README.md). A bounded window keeps the cost per pod independent of the cluster's
size.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from math import exp

from phalanx.core.model.device_share import DEVICE
from phalanx.core.model.names import CPU, GPU, MEMORY
from phalanx.core.placement.fragmentation import ShapeMix
from phalanx.core.placement.state import CycleState, Grade, NodeGrades
from phalanx.core.snapshot.device_choice import choose_devices
from phalanx.core.snapshot.devices import part_of
from phalanx.core.snapshot.shapes import Shape

CANDIDATES = 128
"""The first-fit window of a lone pod: the 128 first nodes by position that take it. The
64 tightest (least room for the pod's shape) beside the 64 first graded as many nodes and
did worse on the FGD paper's benchmark (`python -m bench.packing --traces default
multigpu50 gpushare100 --policies phalanx --seeds 3 4 5`, held out after choosing on
seeds 1-2): the window alone gained +0.09 pt on `default`, -0.02 on `multigpu50` and
+0.36 on `gpushare100`, where cpu runs out (118% of the cluster's cpu arrives): the
tightest nodes for a shape are mostly those whose cpu takes one more pod of it, and the
grade drew pods there from all over the cluster instead of filling one end of it first.
Grading every node did worse still on `gpushare100` (fractions: -0.34 pt on seeds 1-2).
Windows of 96 and 256 were within the seeds' noise of 128 (bench/README.md)."""
ONE_GPU_CANDIDATES = 256
"""The window of a lone pod of one whole GPU while the workload's typical shapes share
devices (`ShapeMix.shares_devices`): the nodes with a fully free device then differ in
what their other devices hold. On the FGD paper's benchmark (`python -m bench.packing
--policies phalanx`, against the 128 window) `multigpu50` went from 97.45% to 97.62%
over seeds 1-5 (+0.11 to +0.18 on held-out seeds 3-5) and `default` from 95.94 to
95.96; `gpushare100` has no whole-GPU pods. Without fractions it lost: `multigpu50-whole`
99.90 -> 99.79 (seeds 1-5), so there the window stays 128. 512 and 1,024 gave the same
figures within the seeds' noise, and 1,024 took the Alibaba simulator's cycle p95 from
0.36 to 0.56 s (`python -m bench.sim.cycles`, seed 1; 256: 0.35 s) (bench/README.md)."""
MULTI_GPU_CANDIDATES = 1024
"""The window of a lone pod of two or more whole GPUs: such pods are few, and the nodes
with that many free devices differ in the cpu and memory left beside them, so they are
graded across (nearly) the whole cluster. On the FGD paper's benchmark (`python -m
bench.packing --policies phalanx`, against the 128 window) `multigpu50-whole` went from
99.76% to 99.90% over seeds 1-5 (+0.14 on seeds 1-2, +0.13 on held-out seeds 3-5);
`default`, `multigpu50` and `default-whole` moved by 0.02 pt or less, `gpushare100` has no
such pods (bench/README.md)."""


def candidates(shape: Shape, mix: ShapeMix) -> int:
    """How many nodes, first by position, a lone pod of `shape` is graded on."""
    whole = PodAsk.of(shape).whole
    if whole >= 2:
        return MULTI_GPU_CANDIDATES
    if whole and mix.shares_devices():
        return ONE_GPU_CANDIDATES
    return CANDIDATES


def least_fragmenting(state: CycleState, shape: Shape, candidates: Iterable[int]) -> int | None:
    """The best candidate node for one pod of `shape` (None: none of them takes it).
    A node's grade is remembered (`CycleState.node_grades`) until the node changes."""
    mix = state.mix
    mix.typical()  # a refresh due happens now, before the remembered grades are read
    known = state.node_grades(mix.version)
    size = state.grade_id(shape)
    ask = PodAsk.of(shape)
    best: Grade | None = None
    chosen = -1
    for node in candidates:  # in a plain loop: a hundred candidates a pod
        grades = known.get(node)
        if grades is None:
            grades = known[node] = NodeGrades()
        sizes = grades.sizes
        if size in sizes:
            found = sizes[size]
        else:
            found = sizes[size] = node_grade(state, node, shape, ask, grades)
        if found is None:
            continue
        if best is None or found < best or (found == best and node < chosen):
            best, chosen = found, node
    return chosen if best is not None else None


@dataclass(frozen=True, slots=True)
class PodAsk:
    """What one pod of the shape takes, as its grade reads it (once per shape, not per
    candidate node: remembered, as `candidates` and `least_fragmenting` both read it for
    every lone pod, and shapes are few and interned)."""

    cpu: int
    memory: int
    whole: int
    uses_gpu: bool

    @staticmethod
    @lru_cache(maxsize=1 << 14)
    def of(shape: Shape) -> PodAsk:
        requests = dict(shape.requests)
        whole = -(-requests.get(GPU, 0) // DEVICE)
        uses_gpu = bool(whole or shape.fractional)
        return PodAsk(requests.get(CPU, 0), requests.get(MEMORY, 0), whole, uses_gpu)


def node_grade(
    state: CycleState, node: int, shape: Shape, ask: PodAsk, grades: NodeGrades
) -> Grade | None:
    """The node's grade for one pod of `shape`, lower is better (None: its devices do not
    take the pod): whether it leaves GPU milli that no GPU pod can use any more, then the
    fragmentation it adds, then whether it opens a node with every GPU free, then whether
    a CPU-only pod lands on a GPU node."""
    added = added_fragmentation(state, node, shape, ask, grades)
    if added is None:
        return None
    gpus = state.index.nodes[node].gpu_count
    uses_gpu = ask.uses_gpu
    opens = 1 if uses_gpu and gpus and state.free[node].get(GPU, 0) >= gpus * DEVICE else 0
    on_gpus = 1 if gpus and not uses_gpu else 0
    return (strands(state, node, shape, ask), grade(added), opens, on_gpus)


def strands(state: CycleState, node: int, shape: Shape, ask: PodAsk) -> int:
    """1 if the pod leaves free GPU milli on a node whose cpu or memory left is then below
    what every typical GPU pod asks for (`ShapeMix.least`), else 0. Such milli is lost to
    the pods that keep arriving, and the grade barely sees it: what is left is often a
    rest too small for the typical shapes (190 milli beside an 810-milli pod), already
    counted lost, or whole GPUs whose loss the grade weighs against a step of ~40 milli.
    Ranked before the grade: on the FGD paper's benchmark (`python -m bench.packing`,
    seeds 1-2 of `default`, `multigpu50`, `gpushare100`) that gained +0.18, +0.10, 0.00
    pt over the grade alone; ranked after it (a tie-break) +0.17, +0.08, -0.05."""
    least_cpu, least_memory = state.mix.least
    free = state.free[node]
    cpu, memory = free.get(CPU, 0), free.get(MEMORY, 0)
    if cpu - ask.cpu >= least_cpu and memory - ask.memory >= least_memory:
        return 0
    if cpu < least_cpu or memory < least_memory:
        return 0  # lost already (only a CPU-only pod fits there)
    left = sum(DEVICE - taken for taken in state.devices(node) if taken < DEVICE)
    if shape.fractional:
        left -= part_of(shape.gpu_milli, shape.gpu_memory, state.index.nodes[node])
    else:
        left -= ask.whole * DEVICE
    return 1 if left > 0 else 0


def grade(added: float) -> int:
    """Lower is better: FGD's integer score of the change (100 x sigmoid), negated, but
    rounded. Truncated, a change of exactly nothing lies on the edge of its step: 1 milli
    lost already grades worse, while up to ~40 milli gained grade the same, so the most
    common case, a pod that costs the typical shapes next to nothing, is split from its
    near-equals and the fixed order among equals (first fit) decides less often. Rounded,
    changes within ~20 milli either way grade as nothing lost. (FGD itself is off the
    edge by accident: its typical pods include CPU-only ones, which count every free GPU
    as lost, so each GPU pod's score carries a constant bonus.) On the FGD paper's
    benchmark (`python -m bench.packing`, five seeds, bench/README.md) allocation at
    130% demand went from 95.05% to 95.42% on `default`, level with FGD."""
    return -round(100.0 / (1.0 + exp(added / 1000.0)))


def added_fragmentation(
    state: CycleState, node: int, shape: Shape, ask: PodAsk, grades: NodeGrades
) -> float | None:
    """Fragmentation of the node after the pod minus before (None: its devices do not
    take the pod); before is remembered in `grades`."""
    info = state.index.nodes[node]
    if not info.gpu_count:
        return 0.0
    free = state.free[node]
    cpu_free, memory_free = free.get(CPU, 0), free.get(MEMORY, 0)
    before = grades.free
    if before is None:
        before = grades.free = [DEVICE - t if t < DEVICE else 0 for t in state.devices(node)]
        grades.ordered = tuple(sorted(before))
    if shape.fractional:
        milli = part_of(shape.gpu_milli, shape.gpu_memory, info)
        after = _taken(state, node, grades, before, milli)
    elif ask.whole:
        after = _taken(state, node, grades, before, DEVICE, ask.whole)
    else:
        after = grades.ordered
    if after is None:
        return None
    mix = state.mix
    lost = mix.sorted_fragmentation(cpu_free - ask.cpu, memory_free - ask.memory, after)
    if grades.lost is None:
        grades.lost = mix.sorted_fragmentation(cpu_free, memory_free, grades.ordered)
    return lost - grades.lost


def _taken(
    state: CycleState,
    node: int,
    grades: NodeGrades,
    before: list[int],
    milli: int,
    whole: int = 0,
) -> tuple[int, ...] | None:
    """The node's free milli per device (`before`: as it is) once a pod takes `milli` of
    one device (a fraction) or `whole` devices, where `choose_devices` puts it, in
    ascending order (None: it does not fit), kept in `grades`."""
    key = (milli, whole)
    if key in grades.taken:
        return grades.taken[key]
    chosen = choose_devices(state.devices(node), milli, whole or 1)
    ordered = None
    if chosen is not None:
        after = list(before)
        for index in chosen:
            after[index] = 0 if whole else after[index] - milli
        ordered = tuple(sorted(after))
    grades.taken[key] = ordered
    return ordered
