"""Nominated room, held in the cycle state.

A hold keeps every group of lower or equal priority off its nodes; the holder itself
and groups of strictly higher priority may use them. Groups are placed in order of
decreasing priority, so a hold is opened just for the group being placed when that
group may use it, and closed again afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.core.names import GroupKey
from phalanx.core.nomination import Nomination
from phalanx.core.state import CycleState


@dataclass(frozen=True, slots=True)
class Hold:
    priority: int
    nodes: tuple[int, ...]
    nomination: Nomination


class Holds:
    def __init__(self, state: CycleState) -> None:
        self.state = state
        self.by_group: dict[GroupKey, Hold] = {}
        self._open: list[GroupKey] = []

    def add(self, group: GroupKey, hold: Hold) -> None:
        self.drop(group)
        self.by_group[group] = hold
        for node in hold.nodes:
            self.state.hold(node)

    def drop(self, group: GroupKey) -> None:
        """Release the group's hold (placed, expired, or replaced)."""
        hold = self.by_group.pop(group, None)
        if hold is None:
            return
        if group in self._open:
            self._open.remove(group)
            return
        for node in hold.nodes:
            self.state.hold(node, -1)

    def open_for(self, group: GroupKey, priority: int) -> None:
        """Let this group use its own hold and the holds of lower-priority groups."""
        self.close()
        for holder, hold in self.by_group.items():
            if holder == group or hold.priority < priority:
                for node in hold.nodes:
                    self.state.hold(node, -1)
                self._open.append(holder)

    def close(self) -> None:
        for holder in self._open:
            for node in self.by_group[holder].nodes:
                self.state.hold(node)
        self._open.clear()

    def nodes_of(self, group: GroupKey) -> frozenset[int]:
        hold = self.by_group.get(group)
        return frozenset(hold.nodes) if hold is not None else frozenset()
