"""The pure scheduling core of Phalanx: snapshot in, decisions out, no I/O.

Entry points: `phalanx.core.parse.snapshot_from_objects` (Kubernetes dicts) or
`Snapshot(...)` (typed dataclasses), then `phalanx.core.cycle.run_cycle`.
"""

from phalanx.core.cycle import run_cycle
from phalanx.core.model.config import SchedulerConfig
from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.eviction import Eviction, EvictionReason
from phalanx.core.model.inputs import (
    GroupInfo,
    GroupTopology,
    NodeInfo,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodInfo,
    PriorityClassInfo,
    QueueInfo,
    RoleSpec,
    SubGroupSpec,
    Taint,
    Toleration,
    TopologyLevel,
    TopologySpec,
)
from phalanx.core.model.names import GroupKey, NodeName, PodKey
from phalanx.core.model.nomination import Nomination
from phalanx.core.model.quantity import parse_quantity
from phalanx.core.model.result import (
    Binding,
    CycleResult,
    ExpectedStart,
    GroupDecision,
    Placement,
    PodCounts,
)
from phalanx.core.model.status import Exclusion, Reason, StatusCode
from phalanx.core.parse import snapshot_from_objects
from phalanx.core.snapshot.picture import Snapshot

__all__ = [
    "Binding",
    "CycleResult",
    "Eviction",
    "EvictionReason",
    "Exclusion",
    "ExpectedStart",
    "GroupDecision",
    "GroupInfo",
    "GroupKey",
    "GroupTopology",
    "InvalidObject",
    "NodeInfo",
    "NodeName",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "Nomination",
    "Placement",
    "PodCounts",
    "PodInfo",
    "PodKey",
    "PriorityClassInfo",
    "QueueInfo",
    "Reason",
    "RoleSpec",
    "SchedulerConfig",
    "Snapshot",
    "StatusCode",
    "SubGroupSpec",
    "Taint",
    "Toleration",
    "TopologyLevel",
    "TopologySpec",
    "parse_quantity",
    "run_cycle",
    "snapshot_from_objects",
]
