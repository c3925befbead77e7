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
  the most allocated nodes first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from phalanx.cluster import labels
from phalanx.core.config import SchedulerConfig
from phalanx.core.cycle import run_cycle
from phalanx.core.ids import CPU, GPU, MEMORY, PODS
from phalanx.core.model import GroupInfo, NodeInfo, PodInfo, TopologyLevel, TopologySpec
from phalanx.core.snapshot import Snapshot
from phalanx.sim.clock import WallTimer, default_wall_timer
from phalanx.sim.jobrun import JobRun
from phalanx.sim.model import JobSpec, SimCluster
from phalanx.sim.policy import CycleOutcome, PodPlacement, SchedulingView

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


def requests(spec: JobSpec) -> dict[str, int]:
    return {
        CPU: spec.cpu_milli_per_pod,
        MEMORY: spec.memory_mib_per_pod * MIB * MILLI,
        GPU: spec.gpus_per_pod * MILLI,
    }


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
    ) -> None:
        self.name = name
        self._cluster = cluster
        self._config = SchedulerConfig(topology_aware=topology_aware, node_order=node_order)
        self._nodes = node_infos(cluster)
        self._topologies = (topology_spec(cluster),) if cluster.levels else ()
        self._wall = wall
        self._position = {node.name: i for i, node in enumerate(cluster.nodes)}
        self._jobs: dict[str, _JobObjects] = {}
        self._bound: dict[str, tuple[PodInfo, ...]] = {}

    def schedule(self, view: SchedulingView) -> CycleOutcome:
        started = self._wall()
        pods: list[PodInfo] = []
        groups: list[GroupInfo] = []
        pod_job: dict[str, str] = {}
        for run in view.running:
            pods.extend(self._bound_pods(run))
            groups.append(self._objects(run.spec).group)
        live = {run.name for run in view.running}
        for stale in [name for name in self._bound if name not in live]:
            del self._bound[stale]
        for run in view.pending:
            objects = self._objects(run.spec)
            groups.append(objects.group)
            pods.extend(objects.waiting)
            pod_job.update(objects.pod_job)
        snapshot = Snapshot(
            nodes=self._nodes, pods=pods, groups=groups, topologies=self._topologies
        )
        prepared = self._wall()
        result = run_cycle(snapshot, self._config, now=view.now)
        finished = self._wall()
        placements = [
            PodPlacement(pod_job[binding.pod], self._position[binding.node])
            for binding in result.bindings
        ]
        return CycleOutcome(
            placements,
            scheduler_seconds=finished - prepared,
            prepare_seconds=prepared - started,
        )

    def _objects(self, spec: JobSpec) -> _JobObjects:
        objects = self._jobs.get(spec.name)
        if objects is None:
            group = GroupInfo(
                namespace=NAMESPACE, name=spec.name, min_member=spec.pods, creation=spec.arrival
            )
            waiting = tuple(self._pod(spec, i) for i in range(spec.pods))
            pod_job = {str(pod.key): spec.name for pod in waiting}
            objects = self._jobs[spec.name] = _JobObjects(group, waiting, pod_job)
        return objects

    def _bound_pods(self, run: JobRun) -> tuple[PodInfo, ...]:
        pods = self._bound.get(run.name)
        if pods is None:
            node_names = [self._cluster.nodes[i].name for i in run.nodes]
            pods = tuple(
                self._pod(run.spec, i, node, "Running") for i, node in enumerate(node_names)
            )
            self._bound[run.name] = pods
            self._jobs.pop(run.name, None)
        return pods

    def _pod(
        self, spec: JobSpec, index: int, node: str | None = None, phase: str = "Pending"
    ) -> PodInfo:
        return PodInfo(
            namespace=NAMESPACE,
            name=f"{spec.name}-{index}",
            requests=requests(spec),
            node_name=node,
            phase=phase,
            group=spec.name,
            priority=spec.priority,
            creation=spec.arrival,
        )
