"""Topology slowdown: how much longer a gang runs when it is spread wider.

Default factors (configurable; `SlowdownModel.off()` is x1 everywhere, and every
benchmark is also reported with it, so no conclusion rests on these numbers):

| span                           | factor |
|--------------------------------|--------|
| one node or one NVLink domain  | x1.00  |
| one rack (leaf switch)         | x1.10  |
| one block / aggregation domain | x1.35  |
| beyond (core / spine)          | x1.70  |

Reasoning: data-parallel training exchanges gradients every step. Inside a node
NVLink gives ~900 GB/s per GPU, so communication hides behind compute. Through
the leaf switch each GPU has one ~50 GB/s (400 Gb/s) NIC, ~18x less; with
overlap that costs roughly a tenth of step time for a communication-heavy
model. Above the leaf, spine and core links are shared and commonly 2:1 to 4:1
oversubscribed, so the per-GPU bandwidth drops again by that factor and ring or
tree collectives cross more hops (more latency): a communication share of step
time of 25-40% (aggregation) up to ~40-50% (core) is typical of large dense
models, hence x1.35 and x1.7.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from phalanx.sim.model import LevelKind, SimCluster, Span


@dataclass(frozen=True, slots=True)
class SlowdownModel:
    node: float = 1.0
    rack: float = 1.10
    block: float = 1.35
    beyond: float = 1.70

    @classmethod
    def off(cls) -> SlowdownModel:
        return cls(1.0, 1.0, 1.0, 1.0)

    @property
    def enabled(self) -> bool:
        return (self.node, self.rack, self.block, self.beyond) != (1.0, 1.0, 1.0, 1.0)

    def factor(self, span: Span) -> float:
        return {
            Span.NODE: self.node,
            Span.RACK: self.rack,
            Span.BLOCK: self.block,
            Span.BEYOND: self.beyond,
        }[span]


_SPAN_OF_KIND = {
    LevelKind.NVLINK: Span.NODE,
    LevelKind.RACK: Span.RACK,
    LevelKind.BLOCK: Span.BLOCK,
    LevelKind.CORE: Span.BEYOND,
}


def span_of(cluster: SimCluster, node_indices: Sequence[int]) -> Span:
    """Finest domain kind shared by all the nodes (a single node is `NODE`)."""
    distinct = set(node_indices)
    if len(distinct) <= 1:
        return Span.NODE
    nodes = [cluster.nodes[i] for i in distinct]
    for level in range(len(cluster.levels) - 1, -1, -1):
        first = nodes[0].domains[level] if level < len(nodes[0].domains) else ""
        if first and all(level < len(n.domains) and n.domains[level] == first for n in nodes):
            return _SPAN_OF_KIND[cluster.levels[level].kind]
    return Span.BEYOND
