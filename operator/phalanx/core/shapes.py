"""A pod's shape: what it requests and where it may go. Pods of one shape share all
per-node work in a cycle (feasibility, fit counts, per-domain aggregates)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from phalanx.core.ids import CPU, GPU, MEMORY
from phalanx.core.model import PodInfo
from phalanx.core.predicates import Constraints, constraints_of


@dataclass(frozen=True, slots=True)
class Shape:
    requests: tuple[tuple[str, int], ...]
    constraints: Constraints

    @property
    def size_key(self) -> tuple[int, int, int, tuple[tuple[str, int], ...]]:
        """Bigger pods first: GPUs, then cpu, then memory."""
        amounts = dict(self.requests)
        return (-amounts.get(GPU, 0), -amounts.get(CPU, 0), -amounts.get(MEMORY, 0), self.requests)


def shape_of(pod: PodInfo) -> Shape:
    return Shape(requests=request_items(pod.requests), constraints=constraints_of(pod))


def request_items(requests: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((name, amount) for name, amount in requests.items() if amount > 0))


def fit_count(
    free: Mapping[str, int], pods_free: int, requests: tuple[tuple[str, int], ...]
) -> int:
    """How many more pods of these requests fit in `free`."""
    count = pods_free
    for name, amount in requests:
        available = free.get(name, 0)
        if available < amount:
            return 0
        fits = available // amount
        if fits < count:
            count = fits
    return count if count > 0 else 0
