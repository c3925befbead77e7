"""Progress of one job during a run (mutable; owned by the engine)."""

from __future__ import annotations

from dataclasses import dataclass, field

from phalanx.sim.model import JobSpec, Span


@dataclass(slots=True)
class JobRun:
    spec: JobSpec
    nodes: list[int] = field(default_factory=list)
    """Node index of each placed pod, in placement order."""
    first_bound: float | None = None
    start: float | None = None
    finish: float | None = None
    end: float | None = None
    """Scheduled finish time once started (finish is set when it happens)."""
    span: Span | None = None
    slowdown: float = 1.0

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def placed(self) -> int:
        return len(self.nodes)

    @property
    def complete(self) -> bool:
        return self.placed == self.spec.pods

    @property
    def held_gpus(self) -> int:
        return self.placed * self.spec.gpus_per_pod
