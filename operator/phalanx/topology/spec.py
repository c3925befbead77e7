"""What a NetworkTopology says: ordered levels, each read from node labels.

Kept apart from the tree so the parser and the simulator can describe a topology
without building anything.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TopologyLevel:
    """One level; a node's domain at this level is the value of the first present label."""

    name: str
    node_labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TopologySpec:
    """A NetworkTopology's levels, coarse to fine."""

    name: str
    levels: tuple[TopologyLevel, ...]

    def level_index(self, level: str) -> int | None:
        for index, spec in enumerate(self.levels):
            if spec.name == level:
                return index
        return None
