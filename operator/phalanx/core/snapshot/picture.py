"""An immutable picture of the cluster: the objects a cycle reads.

Build it from parsed objects (`phalanx.core.parse.snapshot_from_objects`) or
directly from the typed dataclasses (the simulator's cheap path). Construction
builds its index (`phalanx.core.snapshot.index.ClusterIndex`: everything sorted, the
requests of the pods on each node summed, the cached topology trees attached), so a
cycle starts from ready-made arrays; this is the work kube-scheduler's cache does
incrementally before it hands out a snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import InitVar, dataclass, field, replace

from phalanx.core.model.backoff import Backoff
from phalanx.core.model.dra import DraInventory
from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.inputs import (
    GroupInfo,
    NodeInfo,
    PodInfo,
    PriorityClassInfo,
    QueueInfo,
    TopologySpec,
)
from phalanx.core.model.names import GroupKey
from phalanx.core.model.result import Binding
from phalanx.core.snapshot.claims import lower
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.snapshot.ours import bound_on


@dataclass(frozen=True, eq=False)
class Snapshot:
    """`eviction_refused`: keys ("NS/NAME") of pods whose eviction was refused lately
    (a PodDisruptionBudget): the core picks other victims or waits, and says so.
    `previous`: the index of an earlier snapshot of the same cluster, whose summaries of
    unchanged groups the new index takes over (see `ClusterIndex`); not kept."""

    nodes: Sequence[NodeInfo] = ()
    pods: Sequence[PodInfo] = ()
    groups: Sequence[GroupInfo] = ()
    queues: Sequence[QueueInfo] = ()
    topologies: Sequence[TopologySpec] = ()
    priority_classes: Sequence[PriorityClassInfo] = ()
    invalid: Sequence[InvalidObject] = ()
    eviction_refused: frozenset[str] = frozenset()
    backoffs: Mapping[GroupKey, Backoff] = field(default_factory=dict)  # from the last cycle
    partial_since: Mapping[GroupKey, float] = field(default_factory=dict)  # the same
    dra: DraInventory = field(default_factory=DraInventory)
    index: ClusterIndex = field(init=False, repr=False, compare=False)
    previous: InitVar[ClusterIndex | None] = None

    def __post_init__(self, previous: ClusterIndex | None) -> None:
        if not self.dra.empty and not self.dra.lowered:  # DRA devices as resource columns
            lowered = lower(self.nodes, self.pods, self.dra)  # (`snapshot/claims.py`)
            object.__setattr__(self, "nodes", lowered.nodes)
            object.__setattr__(self, "pods", lowered.pods)
            done = replace(self.dra, lowered=True, columns=lowered.columns)
            object.__setattr__(self, "dra", done)
        object.__setattr__(self, "index", ClusterIndex(self, previous))


def with_bindings(snapshot: Snapshot, bindings: Sequence[Binding]) -> Snapshot:
    """The snapshot as it will be once `bindings` land: the same objects, the bound pods
    on their nodes (parsing nothing again, only the index is rebuilt)."""
    if not bindings:
        return snapshot
    by_pod = {str(b.pod): b for b in bindings}
    pods = tuple(
        _bound(pod, by_pod[pod.key]) if pod.key in by_pod else pod for pod in snapshot.pods
    )
    return replace(snapshot, pods=pods)


def _bound(pod: PodInfo, binding: Binding) -> PodInfo:
    return bound_on(pod, str(binding.node), tuple(share.index for share in binding.devices))
