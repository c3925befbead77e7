"""Progress of one job during a run (mutable; owned by the engine)."""

from __future__ import annotations

from dataclasses import dataclass, field

from phalanx.sim.model import JobSpec, Span


@dataclass(slots=True)
class JobRun:
    """One job's current attempt plus what its evicted attempts cost.

    An eviction ends the attempt: every pod is released, the job waits again and
    later starts from its last checkpoint, else from the beginning (`attempt` counts the
    evictions).
    """

    spec: JobSpec
    nodes: list[int] = field(default_factory=list)
    """Node index of each placed pod, in placement order."""
    devices: list[tuple[int, ...]] = field(default_factory=list)
    """The GPU devices each placed pod holds on its node (aligned with `nodes`)."""
    bound_at: list[float] = field(default_factory=list)
    """When each placed pod was bound (its start time as kube-scheduler sees it)."""
    first_bound: float | None = None
    first_start: float | None = None
    start: float | None = None
    """Start of the current attempt (None while waiting)."""
    finish: float | None = None
    end: float | None = None
    """Scheduled finish time once started (finish is set when it happens)."""
    span: Span | None = None
    slowdown: float = 1.0
    attempt: int = 0
    waiting_since: float | None = None
    """When the job last began to wait (arrival or eviction); None while it runs."""
    waited: float = 0.0
    """Seconds spent waiting in earlier waits (the current one not included)."""
    evicted_pods: int = 0
    evicted_gpus: float = 0.0
    lost_gpu_seconds: float = 0.0
    """GPU-seconds of work done by attempts that an eviction threw away."""
    lost_by_cause: dict[str, float] = field(default_factory=dict)
    """`lost_gpu_seconds` by what ended the attempt: an eviction's reason, or Limit."""
    cut: bool = False
    """It reached its runtime limit and was stopped there (it did not finish its work)."""
    expected_start: float | None = None
    expected_at: float | None = None
    """The first start the scheduler said it is expected by, and when it said so."""
    saved_seconds: float = 0.0
    """Runtime at full speed kept by checkpoints of evicted attempts: the next attempt
    runs only the rest."""

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
    def held_milli(self) -> int:
        return self.placed * self.spec.milli_per_pod

    @property
    def held_gpus(self) -> float:
        """GPUs its placed pods hold, a fractional pod counting its part."""
        return self.held_milli / 1000

    def wait_until(self, when: float) -> float:
        """Seconds waited by `when`, the current wait included (a lower bound if it waits)."""
        current = when - self.waiting_since if self.waiting_since is not None else 0.0
        return self.waited + max(current, 0.0)
