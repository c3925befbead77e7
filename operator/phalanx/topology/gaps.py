"""Levels of a NetworkTopology that some nodes do not carry: what makes a topology
`Degraded` (a typo in a label key, or nodes not yet labelled by discovery) and what its
status condition and Warning Event say."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from phalanx.topology.spec import TopologySpec
from phalanx.topology.tree import node_level_values


@dataclass(frozen=True, slots=True)
class LevelGap:
    level: str
    labels: tuple[str, ...]
    missing: int  # nodes without any of the level's labels
    nodes: int

    @property
    def kind(self) -> str:
        """What is lacking, without the counts: 'rack: none' or 'rack: some'."""
        return f"{self.level}: {'none' if self.missing == self.nodes else 'some'}"

    def describe(self) -> str:
        labels = ", ".join(self.labels)
        if self.missing == self.nodes:
            return f"level {self.level}: no node has any of its labels ({labels})"
        return f"level {self.level}: {self.missing} of {self.nodes} nodes have none of its " \
            f"labels ({labels})"


def level_gaps(
    spec: TopologySpec, node_labels: Sequence[Mapping[str, str]]
) -> tuple[LevelGap, ...]:
    """The levels some of these nodes lack, coarse to fine (none without nodes). The caller
    picks the nodes that should carry the topology (Phalanx: those with GPUs)."""
    values = [node_level_values(spec, labels) for labels in node_labels]
    gaps = []
    for index, level in enumerate(spec.levels):
        missing = sum(1 for v in values if v[index] is None)
        if missing:
            gaps.append(LevelGap(level.name, level.node_labels, missing, len(values)))
    return tuple(gaps)


def gaps_message(gaps: tuple[LevelGap, ...]) -> str:
    """One sentence for the `Degraded` condition and its Event; '' when nothing lacks."""
    if not gaps:
        return ""
    return ("; ".join(gap.describe() for gap in gaps)
            + "; such nodes are in no domain of that level, and gangs required on it do not "
            "use them")
