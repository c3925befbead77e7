"""What a scheduling policy sees and returns in one cycle.

The engine owns the state; a policy reads a view and proposes pod placements,
which the engine validates and applies. Core-backed policies and the
kube-scheduler model both fit behind this one protocol.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from phalanx.sim.jobrun import JobRun
from phalanx.sim.model import SimCluster
from phalanx.sim.state import ClusterState


@dataclass(frozen=True, slots=True)
class PodPlacement:
    """A pod of `job` to `node`, on GPU `devices` (None: the first with room there)."""

    job: str
    node: int
    devices: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class PodEviction:
    """Evict `job`'s pod on node `node`; the engine then restarts the whole job. `cause`:
    why (the core's eviction reason: Preempted, Reclaimed), for the work lost by cause."""

    job: str
    node: int
    cause: str = "Preempted"


@dataclass(frozen=True, slots=True)
class SchedulingView:
    now: float
    cluster: SimCluster
    state: ClusterState
    pending: Sequence[JobRun]
    """Arrived jobs that have not started, in arrival order (some may hold pods)."""
    running: Sequence[JobRun]


@dataclass(frozen=True, slots=True)
class CycleOutcome:
    placements: Sequence[PodPlacement]
    scheduler_seconds: float
    """Wall-clock of the scheduling decision itself (run_cycle for the core)."""
    prepare_seconds: float = 0.0
    """Wall-clock spent building the policy's input (the core snapshot)."""
    evictions: Sequence[PodEviction] = ()
    """Pods to evict, applied before `placements` (which may use the room they free)."""
    expected_starts: Mapping[str, float] = field(default_factory=dict)
    """Jobs given a start they are expected by (a reservation's), this cycle."""


class Policy(Protocol):
    name: str

    def schedule(self, view: SchedulingView) -> CycleOutcome: ...
