"""Pods of the Alibaba 2023 trace and the paper's arrival sequence.

The sequence is built as the paper's simulator builds it
(hkust-adsl/kubernetes-scheduler-simulator, `TunePodsByNodeTotalResource`):
the trace's own pods in a seeded random order, then, if their GPU requests
fall short of `demand` x the cluster's GPU milli, pods drawn from the trace
with replacement and appended until the next one would pass that mark; if
they exceed it, pods picked at random are removed until they do not.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from phalanx.sim.paths import resolve

DEVICE_MILLI = 1000
"""One whole GPU, in milli (the trace's unit)."""


@dataclass(frozen=True, slots=True)
class PackPod:
    """One pod: `gpus` devices of `gpu_milli` each (a fractional pod: one device, < 1000)."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int = 0
    gpu_milli: int = 0
    models: tuple[str, ...] = ()
    """Allowed GPU models (the trace's `gpu_spec`); empty: any."""

    @property
    def fractional(self) -> bool:
        return self.gpus == 1 and 0 < self.gpu_milli < DEVICE_MILLI

    @property
    def total_gpu_milli(self) -> int:
        return self.gpus * self.gpu_milli


def read_trace(path: str | Path) -> list[PackPod]:
    """The pods of an `openb_pod_list_*.csv` file (columns as in bench/data/README.md)."""
    pods = []
    with resolve(path).open(newline="") as handle:
        for row in csv.DictReader(handle):
            gpus = int(row["num_gpu"])
            milli = int(row.get("gpu_milli") or 0) if gpus else 0
            spec = row.get("gpu_spec") or ""
            pods.append(
                PackPod(
                    name=row["name"],
                    cpu_milli=int(row["cpu_milli"]),
                    memory_mib=int(row["memory_mib"]),
                    gpus=gpus,
                    gpu_milli=min(milli, DEVICE_MILLI) if gpus else 0,
                    models=tuple(m for m in spec.split("|") if m),
                )
            )
    return pods


def whole_gpu_only(pods: Sequence[PackPod]) -> list[PackPod]:
    """The trace without its fractional pods (CPU-only and whole-GPU pods kept)."""
    return [p for p in pods if not p.fractional]


def arrivals(
    pods: Sequence[PackPod], cluster_gpu_milli: int, seed: int, demand: float = 1.3
) -> list[PackPod]:
    """The arrival order of one seed: every policy of that seed sees the same pods."""
    rng = random.Random(seed)
    sequence = list(pods)
    rng.shuffle(sequence)
    target = demand * cluster_gpu_milli
    total = sum(p.total_gpu_milli for p in sequence)
    while total > target and sequence:
        total -= sequence.pop(rng.randrange(len(sequence))).total_gpu_milli
    if total < target:
        while True:
            pod = pods[rng.randrange(len(pods))]
            if total + pod.total_gpu_milli > target:
                break
            total += pod.total_gpu_milli
            sequence.append(pod)
    return sequence

