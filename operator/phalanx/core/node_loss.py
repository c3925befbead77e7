"""Which of a gang's nodes failed: deleted, NotReady, or tainted NoExecute.

A gang's placement (PodGroup status.placement.nodes) names the nodes it was placed on, and
outlives the pods a failed node takes with it (evicted, garbage collected), so the nodes a
gang lost can still be named when its members are already gone, after a leader change too.
Pure: node facts come from the snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from phalanx.core.snapshot import ClusterIndex

NO_EXECUTE = "NoExecute"


@dataclass(frozen=True, slots=True)
class LostNode:
    node: str
    why: str  # "deleted", "NotReady" or "tainted <key>:NoExecute"

    def describe(self) -> str:
        return f"{self.node} ({self.why})"


def lost_nodes(placed_on: Iterable[str], index: ClusterIndex) -> tuple[LostNode, ...]:
    """The nodes among `placed_on` that failed, sorted by name."""
    lost = []
    for name in sorted(set(placed_on)):
        position = index.node_position.get(name)
        if position is None:
            lost.append(LostNode(name, "deleted"))
            continue
        node = index.nodes[position]
        taint = next((t for t in node.taints if t.effect == NO_EXECUTE), None)
        if not node.ready:
            lost.append(LostNode(name, "NotReady"))
        elif taint is not None:
            lost.append(LostNode(name, f"tainted {taint.key}:{NO_EXECUTE}"))
    return tuple(lost)


def lost_message(lost: tuple[LostNode, ...]) -> str:
    """'node a (NotReady), node b (deleted)'."""
    return ", ".join(f"node {n.describe()}" for n in lost)
