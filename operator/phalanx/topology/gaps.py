"""Levels of a NetworkTopology that some nodes do not carry: what makes a topology
`Degraded` (a typo in a label key, or nodes not yet labelled by discovery) and what its
status condition and Warning Event say."""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.topology.spec import TopologySpec
from phalanx.topology.tree import DomainTree


@dataclass(frozen=True, slots=True)
class LevelGap:
    level: str
    labels: tuple[str, ...]
    missing: int  # nodes without any of the level's labels
    nodes: int

    def describe(self) -> str:
        labels = ", ".join(self.labels)
        if self.missing == self.nodes:
            return f"level {self.level}: no node has any of its labels ({labels})"
        return f"level {self.level}: {self.missing} of {self.nodes} nodes have none of its " \
            f"labels ({labels})"


def level_gaps(spec: TopologySpec, tree: DomainTree) -> tuple[LevelGap, ...]:
    """The levels some nodes lack, coarse to fine (none without nodes)."""
    nodes = len(tree.node_leaf)
    return tuple(
        LevelGap(level.name, level.node_labels, missing, nodes)
        for level, missing in zip(spec.levels, tree.missing, strict=True)
        if missing and nodes
    )


def gaps_message(gaps: tuple[LevelGap, ...]) -> str:
    """One sentence for the `Degraded` condition and its Event; '' when nothing lacks."""
    if not gaps:
        return ""
    return ("; ".join(gap.describe() for gap in gaps)
            + "; such nodes are in no domain of that level, and gangs required on it do not "
            "use them")
