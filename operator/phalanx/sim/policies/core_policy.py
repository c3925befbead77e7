"""`phalanx`, `gang-spread`, `gang-binpack`: the real core, fed a typed snapshot per cycle.

Each job is a PodGroup (`minMember` = its pods) in namespace `sim`; running
jobs are bound pods. Node and topology objects are built once per run (the
core caches the domain tree for unchanged nodes), and a job's pods once per
state change, so a cycle pays for the snapshot's own indexing and for
`run_cycle`, nothing else. The baselines differ from `phalanx` only in
`SchedulerConfig`:
- `gang-spread`: `topology_aware=False, node_order="spread"`;
- `gang-binpack`: `topology_aware=False, node_order="binpack"` — Volcano's
  `gang` plugin (all or nothing, minMember) with its `binpack` plugin (fill
  the most allocated nodes first);
- `phalanx-by-size`: `phalanx` with `weigh_work_lost=False`: victims chosen by size,
  as before the work they lose was weighed (the checkpoints workload compares them);
- `phalanx-dra`: `phalanx` with the GPUs as DRA devices and claims (`sim/dra.py`).
- `phalanx-nobackfill`: `phalanx` with `backfill=False`: reserved room kept idle for
  its gang.
All three run the core's preemption and reclaim: the engine carries out
`CycleResult.evictions` (each victim job restarts), and the room the core holds
for a group (`GroupDecision.nomination`) is handed back in the group's next
snapshot, as the operator does through `status.nominated`. The simulator's
queues become Queue objects; a job whose PriorityClass says
`preemptionPolicy: Never` gets such a class. A job's allowed GPU models become required
node affinity on its pods (`phalanx.sim.constraints`). A fractional pod (part of one
GPU) is handed over as the operator reads a pod annotated
`scheduling.phalanx.io/gpu-fraction`: `PodInfo.gpu_milli` and no `nvidia.com/gpu`
request; the core chooses its device, the engine takes that device, and a bound pod
carries its devices (`gpu_devices`, the `gpu-index` annotation) into later snapshots.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from phalanx.cluster import labels
from phalanx.core.cycle import run_cycle
from phalanx.core.model.config import SchedulerConfig
from phalanx.core.model.dra import DraInventory
from phalanx.core.model.eviction import EvictionReason
from phalanx.core.model.inputs import (
    PREEMPT_NEVER,
    GroupInfo,
    NodeInfo,
    PodInfo,
    PriorityClassInfo,
    QueueInfo,
    TopologyLevel,
    TopologySpec,
)
from phalanx.core.model.names import CPU, GPU, MEMORY, PODS
from phalanx.core.model.nomination import RESERVED, Nomination
from phalanx.core.model.result import Binding, CycleResult
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.snapshot.picture import Snapshot
from phalanx.observe.frozen_heap import FrozenHeap
from phalanx.sim.clock import WallTimer, default_wall_timer
from phalanx.sim.constraints import node_affinity
from phalanx.sim.dra import as_dra, device_index
from phalanx.sim.jobrun import JobRun
from phalanx.sim.model import JobSpec, SimCluster, SimQueue
from phalanx.sim.policy import CycleOutcome, PodEviction, PodPlacement, SchedulingView
from phalanx.sim.queue_usage import SimUsage

NAMESPACE = "sim"
MILLI = 1000
MIB = 2**20


def node_infos(cluster: SimCluster) -> tuple[NodeInfo, ...]:
    return tuple(
        NodeInfo(
            name=node.name,
            allocatable={
                CPU: node.cpu_milli,
                MEMORY: node.memory_mib * MIB * MILLI,
                GPU: node.gpus * MILLI,
                PODS: 110 * MILLI,
            },
            labels=node.labels,
        )
        for node in cluster.nodes
    )


def topology_spec(cluster: SimCluster, name: str = "default") -> TopologySpec:
    levels = [TopologyLevel(level.name, (level.label,)) for level in cluster.levels]
    levels.append(TopologyLevel("host", (labels.HOSTNAME,)))
    return TopologySpec(name=name, levels=tuple(levels))


def queue_infos(queues: Sequence[SimQueue]) -> tuple[QueueInfo, ...]:
    return tuple(
        QueueInfo(
            name=queue.name,
            guarantee=_gpus(queue.guarantee_gpus),
            capability=_gpus(queue.capability_gpus),
            reclaimable=queue.reclaimable,
        )
        for queue in queues
    )


def _gpus(count: int | None) -> dict[str, int] | None:
    return None if count is None else {GPU: count * MILLI}


def claimed_devices(binding: Binding) -> tuple[int, ...]:
    """The GPU indices a binding's DRA claims hold (`phalanx-dra`), in order."""
    return tuple(
        sorted(device_index(r.device[2]) for c in binding.claims for r in c.results)
    )


def never_class(priority: int) -> PriorityClassInfo:
    """The PriorityClass of jobs that may not preempt (`preemptionPolicy: Never`)."""
    return PriorityClassInfo(
        name=f"sim-never-{priority}", value=priority, preemption_policy=PREEMPT_NEVER
    )


def requests(spec: JobSpec) -> dict[str, int]:
    """A pod's resource requests; a fractional pod requests no `nvidia.com/gpu`."""
    asked = {CPU: spec.cpu_milli_per_pod, MEMORY: spec.memory_mib_per_pod * MIB * MILLI}
    if spec.gpus_per_pod:
        asked[GPU] = spec.gpus_per_pod * MILLI
    return asked


@dataclass(frozen=True, slots=True)
class _JobObjects:
    group: GroupInfo
    waiting: tuple[PodInfo, ...]
    pod_job: dict[str, str]


class CorePolicy:
    def __init__(
        self,
        name: str,
        cluster: SimCluster,
        topology_aware: bool,
        node_order: Literal["binpack", "spread"],
        wall: WallTimer = default_wall_timer,
        queues: Sequence[SimQueue] = (),
        usage_half_life_seconds: float = 0.0,
    ) -> None:
        """`usage_half_life_seconds`: fair sharing over time (sim/queue_usage.py)."""
        self.name = name
        self._cluster = cluster
        self.config = SchedulerConfig(
            topology_aware=topology_aware,
            node_order=node_order,
            explain_preemption=False,
            fragmentation_aware=name.startswith("phalanx"),
            weigh_work_lost=name != "phalanx-by-size",
            backfill=name != "phalanx-nobackfill",
            preemption_loss_factor=0.0 if name == "phalanx-evict-always" else 3.0,
            usage_half_life_seconds=usage_half_life_seconds,
        )
        self._usage = SimUsage(usage_half_life_seconds)
        self._nodes = node_infos(cluster)
        self._topologies = (topology_spec(cluster),) if cluster.levels else ()
        self._wall = wall
        self._heap = FrozenHeap(wall)  # see schedule
        self._position = {node.name: i for i, node in enumerate(cluster.nodes)}
        self._queues = queue_infos(queues)
        self._classes: dict[str, PriorityClassInfo] = {}
        self._jobs: dict[str, _JobObjects] = {}
        self._bound: dict[str, tuple[PodInfo, ...]] = {}
        self._bound_nodes: dict[str, tuple[str, int]] = {}
        """Pod key of every bound pod -> (job, node index), to carry out evictions."""
        self._nominations: dict[str, Nomination] = {}
        self._index: ClusterIndex | None = None
        """The last cycle's index: the next snapshot takes over its summaries of unchanged
        groups and nodes, and what its cycle left for the next, as the operator's does."""

    def schedule(self, view: SchedulingView) -> CycleOutcome:
        """The snapshot, then the core's cycle on it with the snapshot out of the cyclic
        garbage collector's reach (`observe/frozen_heap.py`, as the operator's cycle):
        the snapshot is made anew each cycle here (10,000 groups' summaries in a late
        Alibaba cycle), where the operator's index takes most of them over from its last
        cycle, frozen at its cycle's start. Collections inside the core otherwise went
        over the whole snapshot: 0.1-0.2 s of each of the slowest cycles
        (`python -m bench.sim.cycles`, its gc column)."""
        started = self._wall()
        snapshot, pod_job = self.snapshot(view)
        self._heap.cycle_started()
        prepared = self._wall()
        result = run_cycle(snapshot, self.config, now=view.now)
        finished = self._wall()
        placements, evictions = self.carry_out(result, pod_job)
        return CycleOutcome(
            placements,
            scheduler_seconds=finished - prepared,
            prepare_seconds=prepared - started,
            evictions=evictions,
            expected_starts=reserved_starts(result),
        )

    def snapshot(self, view: SchedulingView) -> tuple[Snapshot, dict[str, str]]:
        """The core's input for this view, and the job of each waiting pod (by pod key)."""
        pods: list[PodInfo] = []
        groups: list[GroupInfo] = []
        pod_job: dict[str, str] = {}
        for run in view.running:
            pods.extend(self._bound_pods(run))
            groups.append(self._objects(run.spec).group)
        live = {run.name for run in view.running}
        for stale in [name for name in self._bound if name not in live]:
            self._unbind(stale)
        for run in view.pending:
            objects = self._objects(run.spec)
            nomination = self._nominations.get(run.name)
            group = objects.group
            groups.append(group if nomination is None else replace(group, nomination=nomination))
            pods.extend(objects.waiting)
            pod_job.update(objects.pod_job)
        nodes: Sequence[NodeInfo] = self._nodes
        dra = DraInventory()
        if self.name == "phalanx-dra":  # the same GPUs through DRA (sim/dra.py)
            nodes, pods_seen, dra = as_dra(nodes, pods)
            pods = list(pods_seen)
        snapshot = Snapshot(
            nodes=nodes,
            pods=pods,
            groups=groups,
            queues=self._usage.queues(self._queues, view.running, view.now),
            topologies=self._topologies,
            priority_classes=tuple(self._classes.values()),
            dra=dra,
            previous=self._index,
        )
        self._index = snapshot.index
        return snapshot, pod_job

    def carry_out(
        self, result: CycleResult, pod_job: dict[str, str]
    ) -> tuple[list[PodPlacement], list[PodEviction]]:
        """The core's bindings and evictions in the engine's terms; its holds kept."""
        placements = [
            PodPlacement(
                pod_job[binding.pod],
                self._position[binding.node],
                claimed_devices(binding) or tuple(share.index for share in binding.devices),
            )
            for binding in result.bindings
        ]
        self._keep_nominations(result)
        return placements, self._evictions(result)

    def _evictions(self, result: CycleResult) -> list[PodEviction]:
        """Pods the core evicts, as (job, node); each victim job restarts, so its pods
        are built afresh when it runs again."""
        evictions = [
            PodEviction(*self._bound_nodes[e.pod], cause=str(e.reason))
            for e in result.evictions
            if e.reason is not EvictionReason.RUNTIME_LIMIT  # the engine stops those itself
        ]
        for job in {e.job for e in evictions}:
            self._unbind(job)
        return evictions

    def _keep_nominations(self, result: CycleResult) -> None:
        """The holds the core reports, kept for the group's next snapshot (status.nominated)."""
        prefix = NAMESPACE + "/"
        for decision in result.groups:
            job = decision.group.removeprefix(prefix)
            if decision.nomination is None:
                self._nominations.pop(job, None)
            else:
                self._nominations[job] = decision.nomination

    def _unbind(self, job: str) -> None:
        for pod in self._bound.pop(job, ()):
            self._bound_nodes.pop(pod.key, None)

    def _objects(self, spec: JobSpec) -> _JobObjects:
        objects = self._jobs.get(spec.name)
        if objects is None:
            group = GroupInfo(
                namespace=NAMESPACE,
                name=spec.name,
                min_member=spec.pods,
                queue=spec.queue,
                creation=spec.arrival,
                checkpoint_interval_seconds=spec.checkpoint_interval_seconds,
                runtime_limit_seconds=spec.runtime_limit_seconds,
            )
            waiting = tuple(self._pod(spec, i) for i in range(spec.pods))
            pod_job = {str(pod.key): spec.name for pod in waiting}
            objects = self._jobs[spec.name] = _JobObjects(group, waiting, pod_job)
        return objects

    def _bound_pods(self, run: JobRun) -> tuple[PodInfo, ...]:
        pods = self._bound.get(run.name)
        if pods is None:
            placed = zip(run.nodes, run.bound_at, run.devices, strict=True)
            pods = tuple(
                self._pod(run.spec, i, self._cluster.nodes[node].name, started, devices)
                for i, (node, started, devices) in enumerate(placed)
            )
            self._bound[run.name] = pods
            for pod, node in zip(pods, run.nodes, strict=True):
                self._bound_nodes[pod.key] = (run.name, node)
            self._jobs.pop(run.name, None)
        return pods

    def _pod(
        self,
        spec: JobSpec,
        index: int,
        node: str | None = None,
        started: float | None = None,
        devices: tuple[int, ...] = (),
    ) -> PodInfo:
        """Pod `index` of the job: waiting, or (with `node`) running there on `devices`."""
        priority_class = None
        if not spec.may_preempt:
            never = never_class(spec.priority)
            priority_class = self._classes.setdefault(never.name, never).name
        return PodInfo(
            namespace=NAMESPACE,
            name=f"{spec.name}-{index}",
            requests=requests(spec),
            node_name=node,
            phase="Pending" if node is None else "Running",
            group=spec.name,
            affinity=node_affinity(spec),
            priority=spec.priority,
            priority_class_name=priority_class,
            creation=spec.arrival,
            started_at=started,
            gpu_milli=spec.gpu_milli_per_pod,
            gpu_devices=devices,
        )


def reserved_starts(result: CycleResult) -> dict[str, float]:
    """The start of each job holding a reservation: when it is expected to start."""
    prefix = NAMESPACE + "/"
    return {
        d.group.removeprefix(prefix): d.nomination.start
        for d in result.groups
        if d.nomination is not None and d.nomination.reason == RESERVED
        and d.nomination.start is not None
    }
