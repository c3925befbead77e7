"""Discrete-event simulation of a GPU cluster in virtual time.

Events are arrivals, finishes and scheduling cycles. After each batch of
arrivals or finishes a cycle is queued (at the same instant, or on the next
multiple of `cycle_period`), the policy proposes evictions and placements, the
engine checks and applies them; a job whose pods are all placed starts, and its
finish is queued after its runtime stretched by the topology slowdown of its span.
An evicted pod ends its job's attempt: every pod of the job is released at once
(no grace period), the work done since its last checkpoint is lost (all of it for a
job that saves none), and the job asks to start over from there `restart_delay`
seconds later (a training job under a whole-job restart policy, whose pods are
terminated and created again).
The run stops when no event is left or at the horizon.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from phalanx.core.model.device_share import DEVICE
from phalanx.sim.clock import VirtualClock
from phalanx.sim.events import Event, EventKind, EventQueue
from phalanx.sim.jobrun import JobRun
from phalanx.sim.model import JobSpec, SimCluster
from phalanx.sim.policy import PodEviction, Policy, SchedulingView
from phalanx.sim.slowdown import SlowdownModel, span_of
from phalanx.sim.state import CapacityError, ClusterState


@dataclass(frozen=True, slots=True)
class SimConfig:
    horizon: float
    cycle_period: float = 0.0
    slowdown: SlowdownModel = field(default_factory=SlowdownModel)
    check_invariants: bool = False
    window: tuple[float, float] | None = None
    """Steady-state window (e.g. from a quarter of the arrivals to the last one) over which
    utilisation is also averaged, leaving out the ramp-up and the drain."""
    restart_delay: float = 30.0
    """Seconds from an eviction until the victim job waits again (Kubernetes' default
    terminationGracePeriodSeconds); it also keeps a victim from taking back, at the same
    instant, the room it was evicted from."""

    def __post_init__(self) -> None:
        if self.restart_delay <= 0:
            raise ValueError("restart_delay must be positive (victims come back later)")


@dataclass(frozen=True, slots=True)
class Sample:
    """Cluster state after the events of one instant."""

    time: float
    allocated_gpus: float
    """GPUs held by pods, a fractional pod counting its part (allocated milli / 1000)."""
    held_idle_gpus: float
    fully_free_nodes: int
    pending_jobs: int


@dataclass(frozen=True, slots=True)
class CycleStat:
    time: float
    scheduler_seconds: float
    prepare_seconds: float
    pending_jobs: int
    placements: int
    evictions: int = 0


@dataclass(slots=True)
class Integrals:
    """Time integrals (unit x seconds) over [0, `until`]."""

    until: float = 0.0
    allocated: float = 0.0
    busy: float = 0.0
    held_idle: float = 0.0
    fully_free_nodes: float = 0.0


@dataclass(frozen=True, slots=True)
class SimResult:
    policy: str
    cluster: SimCluster
    config: SimConfig
    runs: tuple[JobRun, ...]
    samples: tuple[Sample, ...]
    cycles: tuple[CycleStat, ...]
    integrals: Integrals
    window: tuple[Integrals, Integrals] | None
    end: float
    """End of the measured window: last finish if every job finished, else the horizon."""


Observer = Callable[[float, ClusterState, dict[str, JobRun]], None]


class InvariantError(AssertionError):
    pass


class _Run:
    """State of one simulation (imperative shell around the policy)."""

    def __init__(
        self,
        cluster: SimCluster,
        jobs: Iterable[JobSpec],
        policy: Policy,
        config: SimConfig,
        observer: Observer | None,
    ) -> None:
        self.cluster, self.policy, self.config = cluster, policy, config
        self.observer = observer
        self.clock = VirtualClock()
        self.state = ClusterState(cluster)
        self.queue = EventQueue()
        ordered = sorted(jobs, key=lambda j: (j.arrival, j.name))
        self.runs = {j.name: JobRun(j) for j in ordered}
        if len(self.runs) != len(ordered):
            raise ValueError("job names must be unique")
        for job in ordered:
            self.queue.push(job.arrival, EventKind.ARRIVAL, job.name)
        self.pending: dict[str, JobRun] = {}
        self.running: dict[str, JobRun] = {}
        self.cycle_queued = False
        self.held_idle = 0
        """GPU milli held by pods of jobs that have not started."""
        self.busy = 0
        """GPU milli held by running jobs."""
        self.samples: list[Sample] = []
        self.cycles: list[CycleStat] = []
        self.integrals = Integrals()
        self.marks: list[Integrals] = []
        self.pending_marks = sorted(config.window) if config.window else []

    def run(self) -> SimResult:
        horizon = self.config.horizon
        while self.queue:
            when = self.queue.peek_time()
            assert when is not None
            if when > horizon:
                break
            self._integrate(when)
            self.clock.advance_to(when)
            for event in self.queue.pop_batch():
                self._handle(event)
            self._after_batch()
        all_done = all(r.finish is not None for r in self.runs.values())
        end = self.clock.now if all_done else horizon
        self._integrate(end)
        return SimResult(
            policy=self.policy.name,
            cluster=self.cluster,
            config=self.config,
            runs=tuple(self.runs.values()),
            samples=tuple(self.samples),
            cycles=tuple(self.cycles),
            integrals=self.integrals,
            window=(self.marks[0], self.marks[1]) if len(self.marks) == 2 else None,
            end=end,
        )

    def _handle(self, event: Event) -> None:
        kind, job = event.kind, event.job
        if kind is EventKind.ARRIVAL:
            run = self.pending[job] = self.runs[job]
            if run.attempt:  # an evicted job back: keep the queue in arrival order
                self.pending = dict(
                    sorted(self.pending.items(), key=lambda kv: (kv[1].spec.arrival, kv[0]))
                )
            if run.waiting_since is None:
                run.waiting_since = self.clock.now
            self._queue_cycle()
        elif kind is EventKind.FINISH:
            current = self.running.get(job)
            if current is None or current.attempt != event.attempt:
                return  # the finish of an attempt that was evicted
            self._finish(self.running.pop(job))
            if self.pending:
                self._queue_cycle()
        else:
            self.cycle_queued = False
            self._cycle()

    def _queue_cycle(self) -> None:
        if self.cycle_queued:
            return
        now, period = self.clock.now, self.config.cycle_period
        when = now if period <= 0 else math.ceil(now / period) * period
        self.queue.push(max(when, now), EventKind.CYCLE)
        self.cycle_queued = True

    def _cycle(self) -> None:
        """The policy's cycle, with every object alive before it moved out of the cyclic
        garbage collector's reach (`gc.freeze`). The simulation makes no reference
        cycles (a `gc.collect()` between cycles found nothing to free in any cycle of
        the Alibaba trace's seed 1), so the collector's full passes over its heap (the
        trace, the jobs, the policy's cached pods) only cost time, and they fell into
        whichever cycle happened to allocate the object that triggered them: 0.1-0.3 s
        of CPU in a third of the Alibaba cycles, the slowest ones. Without cycles,
        reference counting frees all that garbage as before."""
        if not self.pending:
            return
        view = SchedulingView(
            now=self.clock.now,
            cluster=self.cluster,
            state=self.state,
            pending=tuple(self.pending.values()),
            running=tuple(self.running.values()),
        )
        gc.freeze()  # see `_cycle`'s docstring
        outcome = self.policy.schedule(view)
        self._evict(outcome.evictions)
        self._expect(outcome.expected_starts)
        for placement in outcome.placements:
            self._place(placement.job, placement.node, placement.devices)
        self.cycles.append(
            CycleStat(
                time=self.clock.now,
                scheduler_seconds=outcome.scheduler_seconds,
                prepare_seconds=outcome.prepare_seconds,
                pending_jobs=len(view.pending),
                placements=len(outcome.placements),
                evictions=len(outcome.evictions),
            )
        )

    def _evict(self, evictions: Sequence[PodEviction]) -> None:
        """Check every eviction names a pod the job holds, then restart each victim job."""
        pods: dict[str, list[int]] = {}
        for eviction in evictions:
            run = self.pending.get(eviction.job) or self.running.get(eviction.job)
            nodes = pods.setdefault(eviction.job, [])
            nodes.append(eviction.node)
            if run is None or nodes.count(eviction.node) > run.nodes.count(eviction.node):
                raise CapacityError(
                    f"eviction of a pod of {eviction.job!r} on node {eviction.node}, "
                    "where it holds no such pod"
                )
        causes = {e.job: e.cause for e in evictions}
        for job, nodes in pods.items():
            self._restart(self.runs[job], len(nodes), causes[job])
        if pods:
            self._queue_cycle()

    def _expect(self, starts: Mapping[str, float]) -> None:
        """Keep the first start each waiting job is expected by (for the estimate's error)."""
        for job, at in starts.items():
            run = self.pending.get(job)
            if run is not None and run.expected_start is None and run.first_start is None:
                run.expected_start, run.expected_at = at, self.clock.now

    def _restart(self, run: JobRun, evicted_pods: int, cause: str) -> None:
        """End the job's attempt: release all its pods, count the lost work, and have it
        arrive again after the restart delay (it is waiting from now on)."""
        now = self.clock.now
        if self.running.pop(run.name, None) is not None:
            assert run.start is not None
            self.busy -= run.held_milli
            kept = _checkpointed(run, now - run.start)
            lost = run.held_gpus * (now - run.start - kept)
            run.lost_gpu_seconds += lost
            run.lost_by_cause[cause] = run.lost_by_cause.get(cause, 0.0) + lost
            run.saved_seconds += kept / run.slowdown
        else:
            del self.pending[run.name]
            self.held_idle -= run.held_milli
        self._release(run)
        run.evicted_pods += evicted_pods
        run.evicted_gpus += evicted_pods * run.spec.milli_per_pod / 1000
        run.attempt += 1
        run.nodes.clear()
        run.devices.clear()
        run.bound_at.clear()
        run.start = run.end = run.span = None
        run.slowdown = 1.0
        if run.waiting_since is None:
            run.waiting_since = now
        self.queue.push(now + self.config.restart_delay, EventKind.ARRIVAL, run.name)

    def _place(self, job: str, node: int, devices: tuple[int, ...] | None) -> None:
        run = self.pending.get(job)
        if run is None or run.complete:
            raise CapacityError(f"placement for {job!r}, which is not waiting for pods")
        spec = run.spec
        taken = self.state.bind(
            node, spec.milli_per_pod, spec.cpu_milli_per_pod, spec.memory_mib_per_pod, devices
        )
        run.nodes.append(node)
        run.devices.append(taken)
        run.bound_at.append(self.clock.now)
        if run.first_bound is None:
            run.first_bound = self.clock.now
        self.held_idle += spec.milli_per_pod
        if run.complete:
            self._start(run)

    def _start(self, run: JobRun) -> None:
        now = self.clock.now
        del self.pending[run.name]
        self.running[run.name] = run
        self.held_idle -= run.held_milli
        self.busy += run.held_milli
        run.start = now
        if run.first_start is None:
            run.first_start = now
        if run.waiting_since is not None:
            run.waited += now - run.waiting_since
            run.waiting_since = None
        run.span = span_of(self.cluster, run.nodes)
        run.slowdown = self.config.slowdown.factor(run.span)
        run.end = now + (run.spec.duration - run.saved_seconds) * run.slowdown
        limit = run.spec.runtime_limit_seconds
        if limit is not None and run.end > now + limit:  # stopped at its limit
            run.end, run.cut = now + limit, True
        self.queue.push(run.end, EventKind.FINISH, run.name, run.attempt)

    def _finish(self, run: JobRun) -> None:
        """The job's work is done, or (`cut`) its limit ran out and the run is lost."""
        self._release(run)
        self.busy -= run.held_milli
        run.finish = self.clock.now
        if run.cut and run.start is not None:
            lost = run.held_gpus * (run.finish - run.start)
            run.lost_gpu_seconds += lost
            run.lost_by_cause["Limit"] = run.lost_by_cause.get("Limit", 0.0) + lost

    def _release(self, run: JobRun) -> None:
        spec = run.spec
        for node, devices in zip(run.nodes, run.devices, strict=True):
            self.state.release(
                node, spec.milli_per_pod, spec.cpu_milli_per_pod, spec.memory_mib_per_pod, devices
            )

    def _after_batch(self) -> None:
        state = self.state
        self.samples.append(
            Sample(
                time=self.clock.now,
                allocated_gpus=state.allocated_gpus,
                held_idle_gpus=self.held_idle / DEVICE,
                fully_free_nodes=state.fully_free_gpu_nodes(),
                pending_jobs=len(self.pending),
            )
        )
        if self.config.check_invariants:
            self._check()
        if self.observer is not None:
            self.observer(self.clock.now, state, self.runs)

    def _integrate(self, until: float) -> None:
        while self.pending_marks and self.pending_marks[0] <= until:
            self._integrate_span(self.pending_marks.pop(0))
            self.marks.append(replace(self.integrals))
        self._integrate_span(until)

    def _integrate_span(self, until: float) -> None:
        acc = self.integrals
        dt = until - acc.until
        if dt <= 0:
            return
        acc.allocated += self.state.allocated_gpus * dt
        acc.busy += self.busy / DEVICE * dt
        acc.held_idle += self.held_idle / DEVICE * dt
        acc.fully_free_nodes += self.state.fully_free_gpu_nodes() * dt
        acc.until = until

    def _check(self) -> None:
        state = self.state
        held = sum(r.held_milli for r in self.runs.values() if r.finish is None)
        if state.free_milli + held != state.total_milli:
            raise InvariantError(
                f"t={self.clock.now}: free {state.free_milli} + held {held} GPU milli "
                f"!= {state.total_milli}"
            )
        if (state.cpu_free < 0).any() or (state.mem_free < 0).any():
            raise InvariantError(f"t={self.clock.now}: negative free capacity")
        if (state.used > DEVICE).any() or (state.used < 0).any():
            raise InvariantError(f"t={self.clock.now}: a GPU device held beyond 0..1000 milli")
        if self.held_idle + self.busy != held:
            raise InvariantError(f"t={self.clock.now}: held-idle/busy counters drifted")


def simulate(
    cluster: SimCluster,
    jobs: Iterable[JobSpec],
    policy: Policy,
    config: SimConfig,
    observer: Observer | None = None,
) -> SimResult:
    """Run `jobs` on `cluster` under `policy` until no event is left or the horizon."""
    return _Run(cluster, jobs, policy, config, observer).run()


def _checkpointed(run: JobRun, ran: float) -> float:
    """Seconds of the attempt's `ran` (wall-clock) kept by its last checkpoint."""
    interval = run.spec.checkpoint_interval_seconds
    return math.floor(ran / interval) * interval if interval else 0.0
