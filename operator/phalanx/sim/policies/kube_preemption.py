"""kube-scheduler's DefaultPreemption (PostFilter), pod by pod, for the `kube-default` model.

As upstream (`pkg/scheduler/framework/plugins/defaultpreemption` and
`framework/preemption`, Kubernetes 1.36), for one pod that fits on no node:
- Eligible victims on a node are the pods of strictly lower priority; a pod whose
  PriorityClass says `preemptionPolicy: Never` preempts nothing.
- `SelectVictimsOnNode`: remove every eligible victim; if the pod still does not fit,
  the node is no candidate. Otherwise reprieve victims from the most important down
  (higher priority, then earlier start), keeping each one the pod still fits without;
  the rest are the node's victims.
- Candidates: nodes are tried in order until `max(10% of nodes, 100)` candidates are
  found (`minCandidateNodesPercentage` and `minCandidateNodesAbsolute` defaults).
- `pickOneNodeForPreemption`: fewest PodDisruptionBudget violations (there are none in
  the simulator), then the lowest highest-victim priority, then the smallest sum of
  priorities (each plus 2^31), then the fewest victims, then the latest start among
  the highest-priority victims, then the first node.
GPU sharing: a pod's GPU ask is milli (`phalanx.sim.state`); room on a node is judged
device by device (a victim frees its part of the devices it holds; a whole-GPU pod needs
devices nothing holds), as the DRA allocator of the kube-default model sees it.
Simplifications, stated: the candidate search starts at the first node instead of a
random offset; victims are gone at once (no graceful termination), so the pod is bound
to the chosen node in the same cycle instead of being nominated and retried.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from phalanx.core.model.quantity import MAX_INT32
from phalanx.sim.jobrun import JobRun
from phalanx.sim.state import BoolArray, ClusterState, device_ask, room_for

MIN_CANDIDATE_PERCENTAGE = 10
MIN_CANDIDATE_ABSOLUTE = 100
PRIORITY_OFFSET = MAX_INT32 + 1
"""Added to every victim's priority before summing (upstream's MaxInt32 + 1)."""

Shape = tuple[int, int, int]
"""GPU milli (1000 per whole GPU, or the part of one), millicores, MiB of one pod."""


@dataclass(frozen=True, slots=True)
class BoundPod:
    """A pod on a node that a higher-priority pod may evict."""

    job: str
    node: int
    priority: int
    started: float
    shape: Shape
    devices: tuple[int, ...] = ()
    """The GPU devices it holds on its node."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node and the victims that make room on it, most important first."""

    node: int
    victims: tuple[BoundPod, ...]


def bound_pods(runs: Iterable[JobRun], node_count: int) -> list[list[BoundPod]]:
    """The pods on each node (running jobs and pods of jobs still waiting for siblings)."""
    pods: list[list[BoundPod]] = [[] for _ in range(node_count)]
    for run in runs:
        spec = run.spec
        shape = (spec.milli_per_pod, spec.cpu_milli_per_pod, spec.memory_mib_per_pod)
        for node, started, devices in zip(run.nodes, run.bound_at, run.devices, strict=True):
            pods[node].append(BoundPod(run.name, node, spec.priority, started, shape, devices))
    return pods


def importance(pod: BoundPod) -> tuple[int, float, str]:
    """Upstream's MoreImportantPod as a sort key: higher priority, then earlier start."""
    return (-pod.priority, pod.started, pod.job)


@dataclass(slots=True)
class Room:
    """What is free on one node: milli held on each device, cpu, memory."""

    used: list[int]
    cpu: int
    mem: int

    def give_back(self, pod: BoundPod, sign: int = 1) -> None:
        """The room after `pod` leaves (sign 1) or stays after all (sign -1)."""
        share = device_ask(pod.shape[0])[0]
        for index in pod.devices:
            self.used[index] -= sign * share
        self.cpu += sign * pod.shape[1]
        self.mem += sign * pod.shape[2]

    def fits(self, shape: Shape) -> bool:
        gpus = room_for(self.used, shape[0]) is not None
        return gpus and self.cpu >= shape[1] and self.mem >= shape[2]


def room_of(state: ClusterState, node: int) -> Room:
    used = [int(v) for v in state.used[node, : state.gpu_cap[node]]]
    return Room(used, int(state.cpu_free[node]), int(state.mem_free[node]))


def victims_on_node(
    room: Room, pods: Sequence[BoundPod], priority: int, shape: Shape
) -> tuple[BoundPod, ...] | None:
    """The fewest lower-priority pods to evict so `shape` fits, None if none would help."""
    eligible = sorted((p for p in pods if p.priority < priority), key=importance)
    if not eligible:
        return None
    for pod in eligible:
        room.give_back(pod)
    if not room.fits(shape):
        return None
    victims: list[BoundPod] = []
    for pod in eligible:
        room.give_back(pod, -1)
        if room.fits(shape):
            continue  # reprieved: the pod stays
        room.give_back(pod)
        victims.append(pod)
    return tuple(victims)


def candidates(
    state: ClusterState,
    pods: Sequence[Sequence[BoundPod]],
    priority: int,
    shape: Shape,
    allowed: BoolArray | None = None,
) -> list[Candidate]:
    """Nodes (those `allowed` by the pod's node affinity) where evicting helps."""
    nodes = len(pods)
    wanted = min(max(nodes * MIN_CANDIDATE_PERCENTAGE // 100, MIN_CANDIDATE_ABSOLUTE), nodes)
    found: list[Candidate] = []
    for node in range(nodes):
        if allowed is not None and not allowed[node]:
            continue
        if not pods[node]:
            continue
        victims = victims_on_node(room_of(state, node), pods[node], priority, shape)
        if victims:
            found.append(Candidate(node, victims))
            if len(found) >= wanted:
                break
    return found


def pick(found: Sequence[Candidate]) -> Candidate | None:
    """pickOneNodeForPreemption's criteria, in order, as one sort key."""

    def key(candidate: Candidate) -> tuple[int, int, int, float, int]:
        victims = candidate.victims
        highest = victims[0].priority
        earliest_of_highest = min(v.started for v in victims if v.priority == highest)
        return (
            highest,
            sum(v.priority + PRIORITY_OFFSET for v in victims),
            len(victims),
            -earliest_of_highest,
            candidate.node,
        )

    return min(found, key=key, default=None)
