"""`kube-default`: a model of kube-scheduler's default profile, pod by pod.

What it reproduces (Kubernetes scheduler, default `KubeSchedulerConfiguration`):
- Queue: `PrioritySort` (the default QueueSort plugin): higher pod priority
  first, then earlier creation. A job's pods share its arrival time, so they
  queue next to each other.
- One pod at a time, no gang: a pod that fits is bound at once and holds its
  GPUs while its siblings wait; a job runs only when all its pods do. A pod
  that fits nowhere is set aside (unschedulable queue) and retried after the
  next cluster event, without blocking the pods behind it.
- Filter: `NodeResourcesFit`: requested cpu, memory and `nvidia.com/gpu` fit
  in what is free on the node; `NodeAffinity`: the pod's required node affinity (the
  trace's allowed GPU models, `phalanx.sim.constraints`) matches the node.
- Score: `NodeResourcesFit` with its default `LeastAllocated` strategy over
  cpu and memory, weight 1 each (GPUs are *not* scored by default), plus
  `NodeResourcesBalancedAllocation` (also default, weight 1, cpu and memory),
  with the same integer arithmetic:
  least = sum_r (free_r - req_r) * 100 // alloc_r / 2, balanced =
  int((1 - |frac_cpu - frac_mem| / 2) * 100). The other default score
  plugins (taints, affinity, spreading constraints, image locality) are
  neutral for these pods.
- PostFilter: `DefaultPreemption` (`kube_preemption`): a pod that fits nowhere
  evicts the fewest lower-priority pods on the best node and takes their room.
- No topology.
- GPU sharing: kube-scheduler with Dynamic Resource Allocation and consumable device
  capacity (KEP-5075): the DynamicResources filter admits a node when some device has
  the pod's part free (whole GPUs: devices nothing holds), its allocator takes the first
  such device by index (`phalanx.sim.state.room_for`), and no score plugin looks at
  devices. A time-slicing device plugin would instead count every pod as one replica of
  a GPU whatever part it asks, which is no model of fractions at all.
Simplifications, stated: ties go to the first node by name (kube-scheduler
picks one of the best at random); every node is scored (as with
`percentageOfNodesToScore: 100`).
Between two preemptions free capacity only shrinks, and pods come in priority
order, so once a pod shape failed (to fit, and to preempt at its priority) every
later pod of the same or a larger shape is skipped; this is exact, not a heuristic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from phalanx.core.model.inputs import NodeSelectorTerm
from phalanx.sim.clock import WallTimer, default_wall_timer
from phalanx.sim.constraints import AllowedNodes, node_affinity
from phalanx.sim.jobrun import JobRun
from phalanx.sim.model import SimCluster
from phalanx.sim.policies.kube_preemption import BoundPod, Shape, bound_pods, candidates, pick
from phalanx.sim.policy import CycleOutcome, PodEviction, PodPlacement, SchedulingView
from phalanx.sim.state import BoolArray, ClusterState

MAX_NODE_SCORE = 100


def queue_order(pending: Sequence[JobRun]) -> list[JobRun]:
    """PrioritySort: priority descending, then creation time, then name."""
    return sorted(pending, key=lambda r: (-r.spec.priority, r.spec.arrival, r.name))


def best_node(
    state: ClusterState, gpu_milli: int, cpu: int, mem: int, allowed: BoolArray | None = None
) -> int | None:
    """Filter (fit, and node affinity: `allowed`) then score (LeastAllocated +
    BalancedAllocation); None if nothing fits."""
    fit = state.fit_mask(gpu_milli, cpu, mem)
    if allowed is not None:
        fit &= allowed
    candidates = np.flatnonzero(fit)
    if candidates.size == 0:
        return None
    cpu_cap = state.cpu_cap[candidates]
    mem_cap = state.mem_cap[candidates]
    cpu_left = state.cpu_free[candidates] - cpu
    mem_left = state.mem_free[candidates] - mem
    least = (
        cpu_left * MAX_NODE_SCORE // np.maximum(cpu_cap, 1)
        + mem_left * MAX_NODE_SCORE // np.maximum(mem_cap, 1)
    ) // 2
    cpu_frac = np.minimum((cpu_cap - cpu_left) / np.maximum(cpu_cap, 1), 1.0)
    mem_frac = np.minimum((mem_cap - mem_left) / np.maximum(mem_cap, 1), 1.0)
    balanced = ((1.0 - np.abs(cpu_frac - mem_frac) / 2.0) * MAX_NODE_SCORE).astype(np.int64)
    score = least + balanced
    return int(candidates[int(np.argmax(score))])  # argmax: first best, nodes sorted by name


@dataclass(frozen=True, slots=True)
class _Failure:
    """A pod shape that fit nowhere; `priority` is what it could not preempt with
    (None: it did not try)."""

    shape: Shape
    priority: int | None
    affinity: tuple[NodeSelectorTerm, ...]

    def covers(
        self, shape: Shape, priority: int | None, affinity: tuple[NodeSelectorTerm, ...]
    ) -> bool:
        """A later pod this large, allowed on the same nodes, fails too (it comes later,
        so its priority is not higher)."""
        larger = all(s >= f for s, f in zip(shape, self.shape, strict=True))
        same_nodes = affinity == self.affinity
        return larger and same_nodes and (priority is None or (self.priority is not None))


class KubeDefaultPolicy:
    name = "kube-default"

    def __init__(self, cluster: SimCluster, wall: WallTimer = default_wall_timer) -> None:
        self._wall = wall
        self._allowed = AllowedNodes(cluster)

    def schedule(self, view: SchedulingView) -> CycleOutcome:
        started = self._wall()
        placements: list[PodPlacement] = []
        evictions: list[PodEviction] = []
        failed: list[_Failure] = []
        scratch = view.state.copy()
        pods = bound_pods([*view.running, *view.pending], len(view.cluster.nodes))
        lowest = min((p.priority for on_node in pods for p in on_node), default=None)
        for run in queue_order(view.pending):
            if any(e.job == run.name for e in evictions):
                continue  # evicted this cycle: the job restarts, its pods are recreated later
            spec = run.spec
            shape = (spec.milli_per_pod, spec.cpu_milli_per_pod, spec.memory_mib_per_pod)
            preempts = spec.may_preempt and lowest is not None and spec.priority > lowest
            priority = spec.priority if preempts else None
            affinity, allowed = node_affinity(spec), self._allowed.of(spec)
            for _ in range(spec.pods - run.placed):
                if any(f.covers(shape, priority, affinity) for f in failed):
                    break
                node = best_node(scratch, *shape, allowed)
                if node is None and priority is not None:
                    node = _preempt(scratch, pods, priority, shape, allowed, evictions)
                    if node is not None:
                        failed.clear()  # the victims may have freed more than this pod takes
                if node is None:
                    failed.append(_Failure(shape, priority, affinity))
                    break
                devices = scratch.bind(node, *shape)
                placements.append(PodPlacement(run.name, node, devices))
        return CycleOutcome(
            placements, scheduler_seconds=self._wall() - started, evictions=evictions
        )


def _preempt(
    scratch: ClusterState,
    pods: list[list[BoundPod]],
    priority: int,
    shape: Shape,
    allowed: BoolArray,
    evictions: list[PodEviction],
) -> int | None:
    """Evict the chosen node's victims from `scratch` and `pods`; the node, or None."""
    chosen = pick(candidates(scratch, pods, priority, shape, allowed))
    if chosen is None:
        return None
    for victim in chosen.victims:
        scratch.release(victim.node, *victim.shape, victim.devices)
        pods[victim.node].remove(victim)
        evictions.append(PodEviction(victim.job, victim.node))
    return chosen.node
