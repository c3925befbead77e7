"""FGD's "typical pods": the pod shapes that make up most of a workload, with their shares.

As the paper's simulator computes them (`GetTypicalPods`, threshold 95%, step 1): pods are
counted by shape (cpu, GPU milli per device, GPUs, allowed models; memory is not part of
a shape), shapes taken from the most frequent down until they cover 95% of the pods
(ties by the larger shape first), and their shares renormalised to sum to 1.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from phalanx.sim.packing.trace import PackPod


@dataclass(frozen=True, slots=True, order=True)
class Shape:
    cpu_milli: int
    gpu_milli: int
    gpus: int
    models: tuple[str, ...] = ()


def shape_of(pod: PackPod) -> Shape:
    return Shape(pod.cpu_milli, pod.gpu_milli, pod.gpus, pod.models)


def typical_shapes(pods: Iterable[PackPod], coverage: float = 0.95) -> list[tuple[Shape, float]]:
    counts = Counter(shape_of(p) for p in pods)
    total = sum(counts.values())
    ranked = sorted(counts.items(), key=lambda item: (item[1], item[0]), reverse=True)
    chosen: list[tuple[Shape, int]] = []
    covered = 0
    for shape, count in ranked:
        if covered >= coverage * total:
            break
        chosen.append((shape, count))
        covered += count
    return [(shape, count / covered) for shape, count in chosen]
