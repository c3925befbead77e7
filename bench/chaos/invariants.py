"""What the chaos suite checks, as a pure state machine fed with pod states.

Fed every version of every pod the watch shows (any namespace, so a node's GPUs count
every pod on it), it keeps, at every moment:
- overcommit: a node whose non-terminal bound pods request more GPUs than it has;
- partial gangs: a gang of the chaos namespace with some pods bound and some not (a
  terminal pod still counts as bound: it was placed), and how long each such episode
  lasted;
- what is still unbound.
No I/O and no clock of its own: the caller passes the time of each observation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.core.model.inputs import FINISHED_PHASES

GPU = "nvidia.com/gpu"


@dataclass(frozen=True, slots=True)
class PodState:
    node: str
    gpus: int
    terminal: bool
    group: str  # "" for a pod outside the watched gangs


@dataclass(frozen=True, slots=True)
class Overcommit:
    at: float
    node: str
    requested: int
    allocatable: int


@dataclass
class Invariants:
    """Observations so far; `gangs` maps a gang name to its pod names (all must be bound)."""

    allocatable: Mapping[str, int]
    namespace: str
    group_label: str
    gangs: dict[str, frozenset[str]] = field(default_factory=dict)
    pods: dict[str, PodState] = field(default_factory=dict)  # "namespace/name" -> state
    overcommits: list[Overcommit] = field(default_factory=list)
    partial_since: dict[str, float] = field(default_factory=dict)
    partial_episodes: list[tuple[str, float]] = field(default_factory=list)  # gang, seconds

    def expect(self, gang: str, pods: frozenset[str]) -> None:
        """A gang about to be submitted: these pod names (in the chaos namespace) belong to it."""
        self.gangs[gang] = pods

    def observe(self, pod: Mapping[str, Any], deleted: bool, now: float) -> None:
        meta = pod.get("metadata") or {}
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        before = self.pods.get(key)
        if deleted:
            self.pods.pop(key, None)
        else:
            self.pods[key] = pod_state(pod, self.namespace, self.group_label)
        after = self.pods.get(key)
        for state in (before, after):
            if state is not None and state.node:
                self._check_node(state.node, now)
        for state in (before, after):
            if state is not None and state.group:
                self._check_gang(state.group, now)

    def finish(self, now: float) -> None:
        """Close the partial episodes still open (they count up to `now`)."""
        for gang, since in sorted(self.partial_since.items()):
            self.partial_episodes.append((gang, now - since))
        self.partial_since.clear()

    def gpus_on(self, node: str) -> int:
        return sum(s.gpus for s in self.pods.values() if s.node == node and not s.terminal)

    def bound(self, gang: str) -> int:
        return sum(1 for name in self.gangs.get(gang, ()) if self._is_bound(name))

    def unbound(self) -> list[str]:
        """Pods of the expected gangs not bound (yet), sorted."""
        return sorted(name for pods in self.gangs.values() for name in pods
                      if not self._is_bound(name))

    def longest_partial(self, now: float) -> float:
        open_ = [now - since for since in self.partial_since.values()]
        return max([seconds for _, seconds in self.partial_episodes] + open_, default=0.0)

    def _is_bound(self, name: str) -> bool:
        state = self.pods.get(f"{self.namespace}/{name}")
        return state is not None and bool(state.node)

    def _check_node(self, node: str, now: float) -> None:
        requested = self.gpus_on(node)
        allocatable = self.allocatable.get(node, 0)
        if requested > allocatable:
            self.overcommits.append(Overcommit(now, node, requested, allocatable))

    def _check_gang(self, gang: str, now: float) -> None:
        size = len(self.gangs.get(gang, ()))
        bound = self.bound(gang)
        partial = 0 < bound < size
        if partial and gang not in self.partial_since:
            self.partial_since[gang] = now
        elif not partial and gang in self.partial_since:
            self.partial_episodes.append((gang, now - self.partial_since.pop(gang)))


def pod_state(pod: Mapping[str, Any], namespace: str, group_label: str) -> PodState:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    gpus = 0
    for container in spec.get("containers") or ():
        resources = container.get("resources") or {}
        limits = resources.get("limits") or {}
        requests = resources.get("requests") or {}
        gpus += int(requests.get(GPU) or limits.get(GPU) or 0)
    phase = (pod.get("status") or {}).get("phase", "")
    group = ""
    if meta.get("namespace") == namespace:
        group = str((meta.get("labels") or {}).get(group_label) or "")
    return PodState(str(spec.get("nodeName") or ""), gpus, phase in FINISHED_PHASES, group)
