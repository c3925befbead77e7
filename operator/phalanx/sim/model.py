"""Immutable inputs of a simulation: the cluster and the jobs of a trace."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class LevelKind(StrEnum):
    """What a topology level means for communication (drives slowdown and locality)."""

    NVLINK = "nvlink"
    RACK = "rack"
    BLOCK = "block"
    CORE = "core"


class Span(StrEnum):
    """Smallest kind of domain that holds every pod of a job."""

    NODE = "node"
    RACK = "rack"
    BLOCK = "block"
    BEYOND = "beyond"


@dataclass(frozen=True, slots=True)
class TopologyLevel:
    name: str
    label: str
    kind: LevelKind


@dataclass(frozen=True, slots=True)
class SimNode:
    """A node; `domains[i]` is the full path of its domain at level i ("" if unlabelled)."""

    name: str
    gpus: int
    cpu_milli: int
    memory_mib: int
    domains: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SimCluster:
    """Nodes sorted by name, topology levels coarse to fine (host level excluded)."""

    name: str
    nodes: tuple[SimNode, ...]
    levels: tuple[TopologyLevel, ...] = ()
    objects: tuple[Mapping[str, Any], ...] = ()
    """Node and NetworkTopology objects as the API server would return them (for the core)."""

    @property
    def total_gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)

    def level_index(self, kind: LevelKind) -> int | None:
        for i, level in enumerate(self.levels):
            if level.kind is kind:
                return i
        return None


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A gang job: `pods` identical pods that must all run for the job to make progress.

    `duration` is the runtime at full speed (slowdown x1); a job's pods start
    when the last of them is placed, and all finish together. A pod asks for
    `gpus_per_pod` whole GPUs, or (with `gpus_per_pod` 0) for `gpu_milli_per_pod`
    thousandths of one GPU that it shares with other such pods (GPU sharing).
    """

    name: str
    arrival: float
    duration: float
    pods: int
    gpus_per_pod: int
    cpu_milli_per_pod: int = 1000
    memory_mib_per_pod: int = 1024
    priority: int = 0
    queue: str = "default"
    may_preempt: bool = True
    """False: the job's PriorityClass says `preemptionPolicy: Never` (it never evicts)."""
    gpu_models: tuple[str, ...] = ()
    """GPU models its pods may run on (the Alibaba trace's `gpu_spec`); empty: any."""
    gpu_milli_per_pod: int = 0
    """Part of one GPU each pod takes, 1..999 (only with `gpus_per_pod` 0)."""
    checkpoint_interval_seconds: int | None = None
    """The job saves its progress this often (wall-clock seconds from each start): an
    eviction loses only the work since the last save, and the job resumes from it."""
    runtime_limit_seconds: int | None = None
    """The longest the job may run (what its user declares, at or above its runtime):
    the scheduler plans with it, and the engine stops a job that reaches it."""

    def __post_init__(self) -> None:
        if self.gpu_milli_per_pod and (self.gpus_per_pod or not 0 < self.gpu_milli_per_pod < 1000):
            raise ValueError(f"{self.name}: a fractional pod asks 1..999 milli and no whole GPU")

    @property
    def gpus(self) -> int:
        """Whole GPUs of the job (fractional pods count none)."""
        return self.pods * self.gpus_per_pod

    @property
    def milli_per_pod(self) -> int:
        """GPU milli one pod holds: 1000 per whole GPU, or its part of one."""
        return self.gpus_per_pod * 1000 or self.gpu_milli_per_pod

    @property
    def gpu_milli(self) -> int:
        return self.pods * self.milli_per_pod


@dataclass(frozen=True, slots=True)
class SimQueue:
    """A queue of the simulated cluster (a Queue object): GPUs guaranteed to it, GPUs it
    may use at most (None: no limit), and whether others may reclaim what it uses above
    its guarantee."""

    name: str
    guarantee_gpus: int | None = None
    capability_gpus: int | None = None
    reclaimable: bool = True
