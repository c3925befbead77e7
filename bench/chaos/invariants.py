"""What the chaos suite checks, as a pure state machine fed with pod states.

Fed every version of every pod the watch shows (any namespace, so a node's GPUs count
every pod on it), it keeps, at every moment:
- overcommit: a node whose non-terminal bound pods request more GPUs than it has;
- partial gangs: a gang of the chaos namespace with some pods bound and some not (a
  terminal pod still counts as bound: it was placed), and how long each such episode
  lasted;
- what is still unbound.
For the preemption mix (`preemption.py`) it also keeps, per pod uid, the evictions asked
(the `DisruptionTarget` condition the operator writes before each eviction) and done (the
pod deleted), every binding of a gang's pod with the resource version it was seen at, and
(fed the PodGroups too, `observe_group`) every room held in `status.nominated`, so that at
the end `evicted_twice`, `nomination_violations` and `gang_states` can be read.
No I/O and no clock of its own: the caller passes the time of each observation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from phalanx.core.model.inputs import FINISHED_PHASES

GPU = "nvidia.com/gpu"
DISRUPTION_TARGET = "DisruptionTarget"
BY_SCHEDULER = "PreemptionByScheduler"  # the DisruptionTarget reason Phalanx writes


@dataclass(frozen=True, slots=True)
class PodState:
    node: str
    gpus: int
    terminal: bool
    group: str  # "" for a pod outside the watched gangs
    uid: str = ""
    deleting: bool = False  # deletionTimestamp set
    # Phalanx's DisruptionTarget condition (lastTransitionTime, message); the Eviction API
    # replaces it by its own as it deletes the pod
    disruption: tuple[str, str] | None = None


@dataclass(frozen=True, slots=True)
class GangInfo:
    """What the preemption checks need to know of a gang besides its pods."""

    priority: int = 0
    queue: str = ""


@dataclass(frozen=True, slots=True)
class Binding:
    """A gang's pod seen bound for the first time: on `node`, at resource version `version`
    (etcd's revision: comparable across pods and PodGroups) and wall time `wall`."""

    pod: str
    group: str
    node: str
    version: int
    wall: float


@dataclass(frozen=True, slots=True)
class Hold:
    """A room held for `group` (its `status.nominated`), seen from resource version `since`
    until `until` (inf: still held at the end), live until wall time `expires`; `taken`:
    the wall time the core took it (`nominated.since`; inf when absent)."""

    group: str
    nodes: frozenset[str]
    reason: str
    expires: float
    since: int
    until: float = math.inf
    taken: float = math.inf


@dataclass(frozen=True, slots=True)
class Evicted:
    """A pod of a gang deleted during the run (only evictions delete pods there)."""

    pod: str
    group: str
    uid: str
    why: str  # the DisruptionTarget message last seen ("" if none was seen)
    done: bool = False  # the pod had ended (Succeeded or Failed) already


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
    info: dict[str, GangInfo] = field(default_factory=dict)
    bindings: list[Binding] = field(default_factory=list)
    holds: list[Hold] = field(default_factory=list)  # closed ones, then the open ones
    open_holds: dict[str, Hold] = field(default_factory=dict)  # group -> its current hold
    disruptions: dict[str, set[tuple[str, str]]] = field(default_factory=dict)  # uid -> asked
    asked_again: dict[str, str] = field(default_factory=dict)  # uid -> pod: asked once deleting
    evicted: dict[str, Evicted] = field(default_factory=dict)  # uid -> the pod evicted
    eviction_signals: int = 0  # evictions asked or done, seen so far (the kill trigger)

    def expect(self, gang: str, pods: frozenset[str], info: GangInfo | None = None) -> None:
        """A gang about to be submitted: these pod names (in the chaos namespace) belong to it."""
        self.gangs[gang] = pods
        if info is not None:
            self.info[gang] = info

    def observe(self, pod: Mapping[str, Any], deleted: bool, now: float,
                wall: float | None = None) -> None:
        meta = pod.get("metadata") or {}
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        before = self.pods.get(key)
        if deleted:
            self.pods.pop(key, None)
        else:
            self.pods[key] = pod_state(pod, self.namespace, self.group_label)
        after = self.pods.get(key)
        self._evictions(key, before, after, deleted)
        if after is not None and after.group and after.node and (before is None
                                                                  or not before.node):
            self.bindings.append(Binding(key, after.group, after.node, _version(meta),
                                         now if wall is None else wall))
        for state in (before, after):
            if state is not None and state.node:
                self._check_node(state.node, now)
        for state in (before, after):
            if state is not None and state.group:
                self._check_gang(state.group, now)

    def observe_group(self, group: Mapping[str, Any], deleted: bool) -> None:
        """A PodGroup of the chaos namespace as the watch shows it: its hold opened, changed
        or closed at this resource version."""
        meta = group.get("metadata") or {}
        if meta.get("namespace") != self.namespace:
            return
        name = str(meta.get("name") or "")
        version = _version(meta)
        held = None if deleted else (group.get("status") or {}).get("nominated")
        current = self.open_holds.get(name)
        if isinstance(held, Mapping):
            hold = Hold(name, frozenset(str(n) for n in held.get("nodes") or ()),
                        str(held.get("reason") or ""), _wall(held.get("expires")), version,
                        taken=_wall(held.get("since")))
            if current is not None and (current.nodes, current.reason, current.expires) == (
                    hold.nodes, hold.reason, hold.expires):
                return
        else:
            hold = None
        if current is not None:
            self.holds.append(Hold(current.group, current.nodes, current.reason,
                                   current.expires, current.since, version, current.taken))
            del self.open_holds[name]
        if hold is not None:
            self.open_holds[name] = hold

    def all_holds(self) -> list[Hold]:
        return [*self.holds, *self.open_holds.values()]

    def nomination_violations(self) -> list[str]:
        """Bindings of a gang's pod onto a node held for another gang of higher priority
        (any lower or equal gang, Preempting or Reserved: a Reserved hold lets in only a
        gang whose runtime limit ends by its start, and the chaos gangs declare no limit),
        while the hold was live: seen after the hold and before its release (resource
        versions), before it expired."""
        found = []
        holds = self.all_holds()
        for b in self.bindings:
            mine = self.info.get(b.group, GangInfo())
            for h in holds:
                if h.group == b.group or b.node not in h.nodes or b.wall >= h.expires:
                    continue
                if not h.since < b.version < h.until or self._released_by_placing(h, b):
                    continue
                if self._moved_before(h, b, holds):
                    continue
                holder = self.info.get(h.group, GangInfo())
                if mine.priority > holder.priority:
                    continue
                after = [o for o in holds if o.group == h.group and o.since == h.until]
                kept = "ended" if not after else (
                    "changed to a hold " + ("still" if b.node in after[0].nodes else "not")
                    + f" on {b.node}")
                landed = sorted({x.node for x in self.bindings if x.group == h.group})
                found.append(f"{b.pod} (group {b.group}, priority {mine.priority}, queue "
                             f"{mine.queue}) bound on {b.node} at version {b.version}, held "
                             f"({h.reason}) for {h.group} (priority {holder.priority}, queue "
                             f"{holder.queue}) from version {h.since}; that hold {kept} at "
                             f"version {h.until}; {h.group} bound on {landed}")
        return found

    def _released_by_placing(self, hold: Hold, binding: Binding) -> bool:
        """The holder was placed elsewhere (off its held nodes) while its hold still
        showed, and the binding came in that cycle or after: a hold goes once its group is
        placed, in the cycle that places it, and the status write that removes it may land
        after that cycle's other bindings (one second: a cycle's writes)."""
        placed = [b.wall for b in self.bindings if b.group == hold.group
                  and b.version < hold.until and b.node not in hold.nodes]  # fmt: skip
        return bool(placed) and binding.wall >= min(placed) - 1.0

    @staticmethod
    def _moved_before(hold: Hold, binding: Binding, holds: Sequence[Hold]) -> bool:
        """The holder's hold moved off the binding's node by a decision made before the
        binding: the hold that replaced it, on other nodes, was taken (`nominated.since`)
        no later than the binding was seen. A cycle that moves a hold (a group of higher
        priority took part of its room, so its gang evicts elsewhere) may place a lower
        group on the nodes it let go in the same cycle, and the status write that shows
        the move lands after that group's bindings (seen in the preemption mix, seed
        20261203). A binding before the move is still a violation (give or take the
        second `since` is written in, as `_released_by_placing` allows a second), and so is
        one on a hold changed in place (it keeps its `since`: when it changed is unknown)."""
        after = [o for o in holds if o.group == hold.group and o.since == hold.until]
        return bool(after) and binding.node not in after[0].nodes and (
            hold.taken < after[0].taken <= binding.wall)

    def evicted_twice(self) -> list[str]:
        """Pods asked to be evicted again (Phalanx's DisruptionTarget condition written
        anew) once already being deleted: a second eviction of one pod. (A condition
        written again before the deletion is an eviction retried by the next operator
        after a kill, not a second one.)"""
        return sorted(self.asked_again.values())

    def gang_states(self) -> dict[str, str]:
        """Each gang's state now: bound (every pod bound, running or done), waiting (no
        pod bound or evicted), evicted (every pod evicted or done, at least one evicted)
        or lost (anything else: half bound, half evicted)."""
        evicted_pods = {e.pod for e in self.evicted.values()}
        states = {}
        for gang, names in self.gangs.items():
            keys = [f"{self.namespace}/{name}" for name in names]
            gone = sum(1 for k in keys if k in evicted_pods and k not in self.pods)
            bound = sum(1 for k in keys if k in self.pods and self.pods[k].node)
            done = sum(1 for k in keys if k in self.pods and self.pods[k].terminal)
            if bound == len(keys):
                states[gang] = "bound"
            elif bound == 0 and gone == 0:
                states[gang] = "waiting"
            elif gone > 0 and gone + done == len(keys):
                states[gang] = "evicted"
            else:
                states[gang] = "lost"
        return states

    def _evictions(self, key: str, before: PodState | None, after: PodState | None,
                   deleted: bool) -> None:
        """A DisruptionTarget condition of Phalanx's (re)written: an eviction asked (again,
        if the pod was already being deleted); the pod deleted: evicted."""
        state = after or before
        if state is None or not state.group or not state.uid:
            return
        uid = state.uid
        if after is not None and after.disruption is not None and (
                before is None or after.disruption != before.disruption):
            if before is not None and before.deleting:
                self.asked_again[uid] = key
            self.disruptions.setdefault(uid, set()).add(after.disruption)
            self.eviction_signals += 1
        going = deleted or (after is not None and after.deleting)
        if going and uid not in self.evicted:
            self.eviction_signals += 1
            asked = sorted(self.disruptions.get(uid, ()))
            self.evicted[uid] = Evicted(key, state.group, uid, asked[-1][1] if asked else "",
                                        state.terminal)

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
    status = pod.get("status") or {}
    phase = status.get("phase", "")
    group = ""
    if meta.get("namespace") == namespace:
        group = str((meta.get("labels") or {}).get(group_label) or "")
    disruption = None
    for cond in status.get("conditions") or ():
        if cond.get("type") == DISRUPTION_TARGET and cond.get("reason") == BY_SCHEDULER:
            disruption = (str(cond.get("lastTransitionTime") or ""),
                          str(cond.get("message") or ""))
    return PodState(str(spec.get("nodeName") or ""), gpus, phase in FINISHED_PHASES, group,
                    str(meta.get("uid") or ""), bool(meta.get("deletionTimestamp")), disruption)


def _version(meta: Mapping[str, Any]) -> int:
    try:
        return int(meta.get("resourceVersion") or 0)
    except ValueError:
        return 0


def _wall(stamp: Any) -> float:
    """An RFC 3339 time in seconds since the epoch (inf when absent or unreadable)."""
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return math.inf
