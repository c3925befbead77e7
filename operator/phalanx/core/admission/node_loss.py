"""Which of a gang's nodes failed: deleted, NotReady, or tainted NoExecute.

A gang's placement (PodGroup status.placement.nodes) names the nodes it was placed on, and
outlives the pods a failed node takes with it (evicted, garbage collected), so the nodes a
gang lost can still be named when its members are already gone, after a leader change too.
Pure: node facts come from the snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from phalanx.core.model.inputs import Taint, Toleration
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.snapshot.predicates import tolerated

NO_EXECUTE = "NoExecute"
# Set by the node lifecycle controller (not-ready, unreachable) or by an admin on a node
# shut down for good (out-of-service); pods tolerate the first two for tolerationSeconds.
FAILURE_TAINTS = frozenset({
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/out-of-service",
})


@dataclass(frozen=True, slots=True)
class LostNode:
    node: str
    why: str  # "deleted", "NotReady" or "tainted <key>:NoExecute"

    def describe(self) -> str:
        return f"{self.node} ({self.why})"


def lost_nodes(
    placed_on: Iterable[str],
    index: ClusterIndex,
    tolerations: Sequence[tuple[Toleration, ...]] = (),
) -> tuple[LostNode, ...]:
    """The nodes among `placed_on` that failed, sorted by name. `tolerations`: those of
    the gang's pods, one tuple per pod; a NoExecute taint they all tolerate (a GPU pool's
    own taint) is no failure, unless it is one of Kubernetes' node-failure taints (which
    pods tolerate only for a while). Without pods to ask, every NoExecute taint counts."""
    lost = []
    for name in sorted(set(placed_on)):
        position = index.node_position.get(name)
        if position is None:
            lost.append(LostNode(name, "deleted"))
            continue
        node = index.nodes[position]
        taint = next((t for t in node.taints if t.effect == NO_EXECUTE
                      and _evicts(t, tolerations)), None)
        if not node.ready:
            lost.append(LostNode(name, "NotReady"))
        elif taint is not None:
            lost.append(LostNode(name, f"tainted {taint.key}:{NO_EXECUTE}"))
    return tuple(lost)


def _evicts(taint: Taint, tolerations: Sequence[tuple[Toleration, ...]]) -> bool:
    if taint.key in FAILURE_TAINTS or not tolerations:
        return True
    return not all(tolerated(pod, taint) for pod in tolerations)


def lost_message(lost: tuple[LostNode, ...]) -> str:
    """'node a (NotReady), node b (deleted)'."""
    return ", ".join(f"node {n.describe()}" for n in lost)
