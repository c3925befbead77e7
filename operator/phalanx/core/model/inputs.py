"""The typed inputs of a scheduling cycle.

The parser builds these from Kubernetes objects; the simulator builds them
directly. All resources are integer milli-units (see `phalanx.core.model.quantity`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from phalanx.core.model.names import (
    API_GROUP,
    DEFAULT_QUEUE,
    DEFAULT_TOPOLOGY,
    GPU,
    GPU_MEMORY_LABEL,
    SCHEDULER_NAME,
    GroupKey,
    PodKey,
    key_of,
)
from phalanx.core.model.nomination import Nomination
from phalanx.core.model.quantity import whole_number
from phalanx.topology.spec import TopologyLevel, TopologySpec

__all__ = [
    "GroupInfo",
    "GroupTopology",
    "NodeInfo",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "PodInfo",
    "PriorityClassInfo",
    "QueueInfo",
    "RoleSpec",
    "SubGroupSpec",
    "Taint",
    "Toleration",
    "TopologyLevel",
    "TopologySpec",
]

FINISHED_PHASES = frozenset({"Succeeded", "Failed"})
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"
# Kubernetes' PodGroup disruptionMode: how a running group may lose pods
DISRUPT_ALL = "All"  # only together: a lost pod sends the whole group back to be placed whole
DISRUPT_SINGLE = "Single"  # one at a time: a lost pod is replaced alone, victims may be single pods


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True, slots=True)
class Toleration:
    """`operator` is Equal or Exists; an empty `effect` matches every effect."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


@dataclass(frozen=True, slots=True)
class NodeSelectorRequirement:
    """One matchExpressions (or matchFields, with key `metadata.name`) entry."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Expressions and fields are ANDed; terms of a pod are ORed."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeInfo:
    name: str
    allocatable: Mapping[str, int]
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = True
    gpu_count: int = field(init=False, repr=False, compare=False)
    """The node's GPU devices (indices 0..count-1), from allocatable nvidia.com/gpu: set
    once, since fragmentation-aware choice reads it for every candidate node."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "gpu_count", self.allocatable.get(GPU, 0) // 1000)

    @property
    def gpu_memory(self) -> int:
        """MiB of memory per GPU (GPU Feature Discovery's label); 0 when unknown, so a
        pod asking for GPU memory never lands here."""
        text = self.labels.get(GPU_MEMORY_LABEL, "")
        return whole_number(text) or 0


@dataclass(frozen=True, slots=True)
class PodClaim:
    """An entry of a pod's `spec.resourceClaims` (DRA): `claim` names the ResourceClaim it
    uses ("NS/NAME"; for a template, the one kube-controller-manager made, once it is in
    the pod's status), `template` the ResourceClaimTemplate ("NS/NAME") if any. `group`
    ("NS/NAME"): the entry is its Kubernetes PodGroup's `spec.resourceClaims` entry (same
    name and source), so one claim is shared by every pod of the group."""

    name: str
    claim: str | None = None
    template: str | None = None
    group: str | None = None


@dataclass(frozen=True, slots=True)
class PodInfo:
    """A pod, with `requests` already the effective request Kubernetes would use.

    `group` is the PodGroup name in the pod's namespace (None: no group);
    `implied_groups`: the groups its controller's labels point to (a Job's, a JobSet's,
    ...), in order; the first that exists becomes `group` when no label names one;
    `scheduling_gates` lists the gates still on the pod; `terminating`: being deleted
    (its node's capacity stays used until it is gone, but it is no longer a gang member);
    `started_at`: when the pod started (status.startTime): an eviction loses the work
    since then, or since its group's last checkpoint (`preemption/units.py`).

    GPU sharing: `gpu_milli` is the part of ONE GPU a fractional pod asks for, in
    thousandths (1..999), or `gpu_memory` the MiB of one GPU's memory it asks for (the
    part then depends on the node's GPU memory); such a pod has no nvidia.com/gpu in
    `requests`, which stays the whole-GPU request. `gpu_devices`: the device indices a
    pod on a node holds, as written on it (annotation scheduling.phalanx.io/gpu-index).
    `invalid`: why the pod cannot be placed as written (e.g. a GPU fraction of 1.5),
    "" when it can; its group is not placed and says so.
    """

    namespace: str
    name: str
    requests: Mapping[str, int]
    node_name: str | None = None
    phase: str = "Pending"
    scheduler_name: str = SCHEDULER_NAME
    group: str | None = None
    role: str | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: tuple[NodeSelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    priority: int | None = None
    priority_class_name: str | None = None
    creation: float = 0.0
    scheduling_gates: tuple[str, ...] = ()
    terminating: bool = False
    started_at: float | None = None
    implied_groups: tuple[str, ...] = ()
    gpu_milli: int = 0
    gpu_memory: int = 0
    gpu_devices: tuple[int, ...] = ()
    invalid: str = ""
    controlled: bool = False  # has a controller (ownerReferences) that recreates it
    claims: tuple[PodClaim, ...] = ()  # DRA: its spec.resourceClaims
    # `namespace/name`, made once per PodInfo: a snapshot reads it several times for
    # each of its (at bench-5000, 20,870) pods, and each making cost a string.
    key: PodKey = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", key_of(self.namespace, self.name))

    @property
    def fractional(self) -> bool:
        """Asks for part of one GPU (by fraction or by memory)."""
        return bool(self.gpu_milli or self.gpu_memory)

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED_PHASES


@dataclass(frozen=True, slots=True)
class RoleSpec:
    name: str
    min_member: int


@dataclass(frozen=True, slots=True)
class SubGroupSpec:
    """Every consecutive `size` pods of the gang lie inside one domain of `required`.
    `required_label` names that level by a node label key instead (resolved while
    parsing, as GroupTopology's); `by_role`: the pods are taken in order of their role,
    one sub-group per role (a Kubernetes CompositePodGroup: a role per child PodGroup)."""

    size: int
    required: str
    required_label: str | None = None
    by_role: bool = False


@dataclass(frozen=True, slots=True)
class GroupTopology:
    """Levels by name. `required_label` / `preferred_label` name a level by a node label
    key instead (Kubernetes' and Kueue's way); parsing resolves them to a level name of
    the NetworkTopology that reads that label, or of an implicit one on that label."""

    network_topology: str = DEFAULT_TOPOLOGY
    required: str | None = None
    preferred: str | None = None
    sub_group: SubGroupSpec | None = None
    required_label: str | None = None
    preferred_label: str | None = None


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """A gang. `api_group` says which PodGroup kind it was read from (Phalanx's own or
    Kubernetes' `scheduling.k8s.io`), so its status goes back to that object."""

    namespace: str
    name: str
    min_member: int
    queue: str = DEFAULT_QUEUE
    priority_class_name: str | None = None
    min_resources: Mapping[str, int] | None = None
    roles: tuple[RoleSpec, ...] = ()
    topology: GroupTopology | None = None
    creation: float = 0.0
    schedule_timeout_seconds: int | None = None
    nomination: Nomination | None = None
    api_group: str = API_GROUP
    phase: str = "Pending"  # status.phase, as the last cycle reported it
    placed_nodes: tuple[str, ...] = ()  # status.placement.nodes (outlives failed nodes)
    # Kubernetes' PodGroup fields (v1beta1): the group's own priority and preemptionPolicy
    # (None: from its PriorityClass, else its pods), and its disruptionMode (None: Phalanx's
    # own, a replacement placed alone and the rest released past the group's deadline)
    priority: int | None = None
    preemption_policy: str | None = None
    disruption: str | None = None
    ran_whole: bool = False  # its scheduling condition says it was placed whole once
    # the Kubernetes CompositePodGroup this PodGroup is a child of: parsing folds the
    # children into one gang of the composite, so no cycle ever sees it set
    parent: str | None = None
    # what an eviction would lose (`preemption/units.py`): the job's last checkpoint as it
    # reports it (annotation scheduling.phalanx.io/checkpointed-at), or the interval it
    # declares it saves at (spec.checkpointIntervalSeconds); neither: all since it started
    checkpointed_at: float | None = None
    checkpoint_interval_seconds: int | None = None
    # the longest the gang runs (spec.runtimeLimitSeconds, or its workload's
    # activeDeadlineSeconds / Kueue max-exec-time label): past it, it is evicted; plans
    # (expected starts, backfill) count on it. None: its queue's default, else no limit
    runtime_limit_seconds: int | None = None
    # Kubernetes' PodGroup's `spec.resourceClaims`: claims shared by the whole group
    claims: tuple[PodClaim, ...] = ()

    @property
    def key(self) -> GroupKey:
        return GroupKey(key_of(self.namespace, self.name))


@dataclass(frozen=True, slots=True)
class QueueInfo:
    """A cluster-scoped queue; `capability` None means unlimited, `namespaces` () means all."""

    name: str
    weight: int = 1
    capability: Mapping[str, int] | None = None
    guarantee: Mapping[str, int] | None = None
    parent: str | None = None
    reclaimable: bool = True
    open: bool = True
    namespaces: tuple[str, ...] = ()
    creation: float = 0.0
    # how long a gang of this queue runs before it may be preempted (for a group of its
    # queue) or reclaimed (for another queue): KAI's preemptMinRuntime / reclaimMinRuntime;
    # None: from the parent queue, else none
    preempt_min_runtime_seconds: int | None = None
    reclaim_min_runtime_seconds: int | None = None
    # runtime limits of its gangs: the limit of a gang that sets none (else the maximum),
    # and the most a gang may set (a gang above it is refused); None: from the parent
    default_runtime_limit_seconds: int | None = None
    max_runtime_limit_seconds: int | None = None
    # fair sharing over time (admission/usage.py): the queue's decayed usage, resource ->
    # milli-unit-seconds, as of `usage_at` (from Queue status.usage, kept by the shell),
    # and its half-life (spec.fairSharing.usageHalfLifeSeconds; None: the global one)
    usage: Mapping[str, float] = field(default_factory=dict)
    usage_at: float = 0.0
    usage_half_life_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class PriorityClassInfo:
    """`preemption_policy` "Never" keeps groups of this class from evicting others."""

    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = PREEMPT_LOWER_PRIORITY
