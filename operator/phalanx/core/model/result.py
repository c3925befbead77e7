"""What a cycle returns: bindings and one decision per group, with reasons."""

from __future__ import annotations

from dataclasses import dataclass, field

from phalanx.core.model.backoff import Backoff
from phalanx.core.model.device_share import DeviceShare
from phalanx.core.model.dra import ClaimAllocation
from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.eviction import Eviction
from phalanx.core.model.names import GroupKey, NodeName, PodKey
from phalanx.core.model.nomination import Nomination
from phalanx.core.model.status import Reason, StatusCode


@dataclass(frozen=True, slots=True)
class Binding:
    """`devices`: the GPU devices the pod takes on the node (each whole GPU one share of
    1000; a fractional pod one share of its part), () for a pod without GPUs. `claims`:
    the DRA allocations to write before the binding, for the pod's claims not allocated
    yet (a claim shared with a pod bound earlier in the cycle is allocated once)."""

    pod: PodKey
    node: NodeName
    group: GroupKey
    devices: tuple[DeviceShare, ...] = ()
    claims: tuple[ClaimAllocation, ...] = ()


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a group's pods went this cycle.

    `level` is the level of the single domain chosen for the gang (None: no topology,
    or the gang spans the whole cluster); `climbed_levels` counts how many levels above
    the preferred one it had to go (0 without a preferred level); `domains` are
    (level, path) of that domain, or of the top-level domains used when it spans the
    cluster (path: the domain's labels joined by "/", e.g. "block-1/rack-3");
    `nodes` are all nodes holding the group's pods after this cycle, sorted.
    """

    network_topology: str | None
    level: str | None
    climbed_levels: int
    domains: tuple[tuple[str, str], ...]
    nodes: tuple[NodeName, ...]


@dataclass(frozen=True, slots=True)
class PodCounts:
    """A group's pods by phase, as the PodGroup's status reports them: a pod bound but
    not started (its phase still Pending, or Unknown) counts as pending."""

    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0


@dataclass(slots=True)
class GroupDecision:
    """The outcome for one group. Not frozen, though never changed once returned: one is
    made per group every cycle (10,000 in the Alibaba simulation), and a frozen
    dataclass's `__init__` took 3-5x as long (an `object.__setattr__` per field).

    `placed` counts the group's unfinished pods on nodes after this cycle (running ones
    included); `on_nodes` counts finished ones too (a gang whose pods ran and finished
    was scheduled: the PodGroup's Scheduled condition counts these);
    `scheduled` is `placed >= min_member`; `admitted` says the group passed queue
    admission this cycle (or already runs its minimum). `placement` is set only when
    this cycle bound pods of the group. `counts` are the group's pods by phase.
    `nomination` is the room held for the group after this cycle (preemption or
    starvation reservation), None when it holds none.

    `backoff` is set once the group ran past its scheduleTimeoutSeconds unscheduled (the
    shell hands it back in the next snapshot); `held` says the group waited out that
    backoff this cycle and was not tried (nothing about it changed); `timed_out` says
    this cycle tried it and it timed out (again). `partial_since`: when the group was
    first seen partly placed, while it still is (the shell hands it back, as `backoff`).
    """

    group: GroupKey
    admitted: bool
    scheduled: bool
    placed: int
    code: StatusCode
    reason: Reason
    message: str
    placement: Placement | None
    queue: str = ""
    min_member: int = 1
    priority: int = 0
    counts: PodCounts = PodCounts()
    implicit: bool = False
    nomination: Nomination | None = None
    on_nodes: int = 0
    backoff: Backoff | None = None
    held: bool = False
    partial_since: float | None = None

    @property
    def timed_out(self) -> bool:
        return self.backoff is not None and not self.held


@dataclass(frozen=True, slots=True)
class PartialRelease:
    """A gang left partly placed past its deadline: delete `pods` so their controller
    recreates the whole gang (none: they have no controller and are left running), and
    say so with a Warning Event of this `reason` and `message`."""

    group: GroupKey
    pods: tuple[PodKey, ...]
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class ExpectedStart:
    """When a waiting group is expected to start, played forward from the runtime limits
    of what runs (and of what is expected to start before it): `at` (epoch seconds) None
    when it depends on a gang with no limit (unknown, never made up); `waits_for`: the
    groups whose ends make its room; `message`: that, in a sentence ("expected to start by
    14:20 UTC, when 3 gangs in rack r2 reach their limits")."""

    group: GroupKey
    at: float | None
    waits_for: tuple[GroupKey, ...]
    message: str


@dataclass(frozen=True, slots=True)
class CycleResult:
    """`evictions`: running pods to evict (one entry per pod), each for a preemptor that
    fits once they are gone; the preemptor is not bound in the same cycle. `releases`:
    partial gangs past their deadline (partial.py). `expected_starts`: one per waiting
    group, when the cycle was asked to estimate (`run_cycle(..., estimate=True)`)."""

    bindings: tuple[Binding, ...]
    groups: tuple[GroupDecision, ...]
    invalid: tuple[InvalidObject, ...] = ()
    now: float = 0.0
    evictions: tuple[Eviction, ...] = ()
    releases: tuple[PartialRelease, ...] = ()
    expected_starts: tuple[ExpectedStart, ...] = ()
    _by_group: dict[str, GroupDecision] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_group", {d.group: d for d in self.groups})

    def decision(self, group: str) -> GroupDecision | None:
        return self._by_group.get(group)
