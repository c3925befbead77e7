"""`kueue-like`: a model of Kueue's ClusterQueues with Topology Aware Scheduling.

A queue-aware baseline for the preemption benchmarks: the documented behaviour of Kueue
(pages under https://kueue.sigs.k8s.io/docs/concepts/, named below by their last part),
configured as a cluster with teams would be:
- ClusterQueues (cluster_queue/): one per simulated queue, all in one cohort; a queue's
  guarantee is its `nominalQuota` of `nvidia.com/gpu`, its capability its nominal quota
  plus `borrowingLimit` (none: it may borrow whatever the cohort leaves unused). The
  cohort holds the cluster's GPUs: what the nominal quotas leave over is the cohort's own
  quota (cohort/, a Cohort with `resourceGroups`), which every queue uses by borrowing.
  A job of a queue the trace does not declare gets a ClusterQueue without nominal quota.
- Queueing (cluster_queue/, "Queueing strategy", `BestEffortFIFO`; and the scheduler's
  order of queue heads): workloads that fit within their queue's nominal quota first,
  then higher priority, then older; one that cannot be admitted does not block the rest.
- Admission is whole-workload (a job's pods are admitted all at once or not at all),
  against the quota first (`kueue_preemption.Quota`), then the topology: preemption when
  neither fits as is (`kueue_preemption`, Classic Preemption with
  `withinClusterQueue: LowerPriority`, `reclaimWithinCohort: Any`,
  `borrowWithinCohort: LowerPriority`). Jobs whose PriorityClass says
  `preemptionPolicy: Never` do not preempt.
- Placement (topology_aware_scheduling/, the `podset-preferred-topology` annotation at
  the finest level, the hosts): the simulator's jobs state no required level, and the
  core policies treat locality as best effort, so the levels are tried from the host up
  (host, then each level of the NetworkTopology, finest first), and a job that fits in no
  single domain is spread over the cluster. At a level, the domain chosen is the one with
  the least room that still holds every pod (best fit, ties by name); inside it the pods
  go to the nodes with the most room first and the last ones to the node with the least
  room that holds them (fewest nodes, tightest last), within the pods' node affinity
  (`phalanx.sim.constraints`). Room per node counts whole free devices (a fractional pod:
  the parts left on each device), cpu and memory, as TAS's capacity does.
Simplifications, stated: all pending workloads are considered in one pass each cycle
(Kueue admits one head per ClusterQueue per cycle; with cycles at every event it comes to
the same), victims are gone at once (no graceful termination) so the preemptor is admitted
in the same cycle, TAS picks domains level by level only down to the chosen domain and
then node by node inside it, queues' `reclaimable: false` has no Kueue counterpart and is
ignored, and fair sharing is off (Classic Preemption). Deterministic: every order ends on
a name.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from phalanx.core.model.device_share import DEVICE
from phalanx.sim.clock import WallTimer, default_wall_timer
from phalanx.sim.constraints import AllowedNodes
from phalanx.sim.jobrun import JobRun
from phalanx.sim.model import JobSpec, SimCluster, SimQueue
from phalanx.sim.policies.kueue_preemption import Preemptor, Quota, Shape, Workload, release
from phalanx.sim.policies.kueue_preemption import targets as preemption_targets
from phalanx.sim.policy import CycleOutcome, PodEviction, PodPlacement, SchedulingView
from phalanx.sim.state import BoolArray, ClusterState, IntArray, device_ask

PLENTY = 1 << 40
"""Room for pods that ask nothing of a resource."""


def shape_of(spec: JobSpec) -> Shape:
    return (spec.milli_per_pod, spec.cpu_milli_per_pod, spec.memory_mib_per_pod)


def pods_per_node(state: ClusterState, shape: Shape, allowed: BoolArray) -> IntArray:
    """How many pods of `shape` each node still holds (0 outside `allowed`)."""
    milli, cpu, mem = shape
    share, count = device_ask(milli)
    if not count:
        gpus = np.full(len(state.gpu_cap), PLENTY, dtype=np.int64)
    elif share == DEVICE:
        gpus = state.gpu_free // count
    else:
        gpus = ((DEVICE - state.used) // share).sum(axis=1)
    cpus = state.cpu_free // cpu if cpu else PLENTY
    mems = state.mem_free // mem if mem else PLENTY
    room: IntArray = np.where(allowed, np.minimum(np.minimum(gpus, cpus), mems), 0)
    return room


class Domains:
    """The topology levels TAS tries, finest first: each a domain index per node (domains
    numbered in name order), ending with the whole cluster."""

    def __init__(self, cluster: SimCluster) -> None:
        count = len(cluster.nodes)
        levels: list[IntArray] = [np.arange(count, dtype=np.int64)]
        for level in reversed(range(len(cluster.levels))):
            names = [n.domains[level] if level < len(n.domains) else "" for n in cluster.nodes]
            _, index = np.unique(np.array(names, dtype=object), return_inverse=True)
            levels.append(index.astype(np.int64))
        levels.append(np.zeros(count, dtype=np.int64))
        self.levels = levels

    def place(self, room: IntArray, pods: int) -> list[tuple[int, int]] | None:
        """(node, pods) for the job's pods in the best-fit domain of the finest level
        where one holds them all; None if the cluster cannot."""
        for index in self.levels:
            capacity = np.bincount(index, weights=room).astype(np.int64)
            fitting = np.flatnonzero(capacity >= pods)
            if fitting.size:
                best = int(fitting[int(np.argmin(capacity[fitting]))])
                return fill(np.flatnonzero((index == best) & (room > 0)), room, pods)
        return None


def fill(nodes: IntArray, room: IntArray, pods: int) -> list[tuple[int, int]]:
    """The fewest nodes, most room first, the last pods on the tightest node that holds
    them: [(node, pods)]. The nodes hold `pods` between them."""
    order = sorted((int(n) for n in nodes), key=lambda n: (-int(room[n]), n))
    chosen: list[tuple[int, int]] = []
    left = pods
    for position, node in enumerate(order):
        if room[node] >= left:
            tight = min(order[position:], key=lambda n: (room[n] < left, int(room[n]), n))
            chosen.append((tight, left))
            return chosen
        chosen.append((node, int(room[node])))
        left -= int(room[node])
    raise ValueError(f"{pods} pods do not fit on nodes {order}")


class KueueLikePolicy:
    name = "kueue-like"

    def __init__(
        self,
        cluster: SimCluster,
        wall: WallTimer = default_wall_timer,
        queues: Sequence[SimQueue] = (),
    ) -> None:
        self._wall = wall
        self._allowed = AllowedNodes(cluster)
        self._domains = Domains(cluster)
        self._nominal = {q.name: (q.guarantee_gpus or 0) * DEVICE for q in queues}
        self._limit = {
            q.name: None if q.capability_gpus is None else q.capability_gpus * DEVICE
            for q in queues
        }
        self._capacity = max(cluster.total_gpus * DEVICE, sum(self._nominal.values()))

    def schedule(self, view: SchedulingView) -> CycleOutcome:
        started = self._wall()
        cycle = _Cycle(self, view)
        for run in self._order(view.pending, cycle.quota):
            if not run.placed:
                cycle.admit(run)
        return CycleOutcome(
            cycle.placements, scheduler_seconds=self._wall() - started, evictions=cycle.evictions
        )

    def quota(self, runs: Sequence[JobRun]) -> Quota:
        """The cohort's quota with the usage of `runs` (admitted workloads)."""
        quota = Quota(self._nominal, self._limit, self._capacity)
        for run in runs:
            quota.add(run.spec.queue, run.spec.gpu_milli)
        return quota

    def place(
        self, state: ClusterState, spec: JobSpec, pods: int | None = None
    ) -> list[tuple[int, int]] | None:
        """TAS's assignment of the job's pods in `state`, or None."""
        room = pods_per_node(state, shape_of(spec), self._allowed.of(spec))
        return self._domains.place(room, spec.pods if pods is None else pods)

    def _order(self, pending: Sequence[JobRun], quota: Quota) -> list[JobRun]:
        """Kueue's order of heads: within nominal quota first, higher priority, older."""

        def key(run: JobRun) -> tuple[bool, int, float, str]:
            spec = run.spec
            borrows = not quota.within_nominal(spec.queue, spec.gpu_milli)
            return (borrows, -spec.priority, spec.arrival, spec.name)

        return sorted(pending, key=key)


class _Cycle:
    """One cycle's scratch state: quota, free room, the admitted workloads that may be
    preempted (not those admitted in this cycle), and what it decided."""

    def __init__(self, policy: KueueLikePolicy, view: SchedulingView) -> None:
        self.policy = policy
        held = [r for r in view.pending if r.placed]
        self.quota = policy.quota([*view.running, *held])
        self.state = view.state.copy()
        self.admitted = [_workload(run) for run in view.running]
        self.placements: list[PodPlacement] = []
        self.evictions: list[PodEviction] = []
        self.failed: set[tuple[object, ...]] = set()
        """Jobs alike to one that could not be admitted since the last eviction: admissions
        only take room and quota, so they cannot be admitted either."""

    def admit(self, run: JobRun) -> None:
        spec = run.spec
        alike = (spec.queue, shape_of(spec), spec.pods, spec.priority, spec.gpu_models)
        if alike in self.failed:
            return
        assignment = self._fit(spec)
        if assignment is None and spec.may_preempt and self._preempt(spec):
            self.failed.clear()
            assignment = self._fit(spec)
        if assignment is None:
            self.failed.add(alike)
            return
        self.quota.add(spec.queue, spec.gpu_milli)
        shape = shape_of(spec)
        for node, pods in assignment:
            for _ in range(pods):
                devices = self.state.bind(node, *shape)
                self.placements.append(PodPlacement(spec.name, node, devices))

    def _fit(self, spec: JobSpec) -> list[tuple[int, int]] | None:
        if not self.quota.fits(spec.queue, spec.gpu_milli):
            return None
        return self.policy.place(self.state, spec)

    def _preempt(self, spec: JobSpec) -> bool:
        """Evict the Classic Preemption targets for `spec`; whether there were any."""
        pending = Preemptor(spec.queue, spec.priority, spec.gpu_milli)

        def places(state: ClusterState) -> bool:
            return self.policy.place(state, spec) is not None

        chosen = preemption_targets(pending, self.admitted, self.quota, self.state, places)
        for victim in chosen:
            release(victim, self.quota, self.state)
            self.admitted.remove(victim)
            self.evictions += [PodEviction(victim.job, node) for node, _ in victim.pods]
        return bool(chosen)


def _workload(run: JobRun) -> Workload:
    spec = run.spec
    admitted = run.start if run.start is not None else max(run.bound_at, default=0.0)
    pods = tuple(zip(run.nodes, run.devices, strict=True))
    return Workload(spec.name, spec.queue, spec.priority, admitted, shape_of(spec), pods)
