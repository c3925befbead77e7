"""Nominated room, held in the cycle state.

A hold keeps every group of lower or equal priority off its nodes. Who else may use it
depends on how the room came to be free:
- room freed by evictions (Preempting) is open only to groups that could evict the
  holder itself once it runs: of its queue, of strictly higher priority, allowed to
  preempt. A group of another queue could not, so giving it the room only sends the
  holder evicting again, and the victims' work is lost for nothing (in the simulator a
  team's high-priority jobs took the room another team had reclaimed, cycle after cycle);
- a starvation reservation (Reserved) evicted nobody: groups of strictly higher
  priority may use it, as they would any free room; and it lends its room, while the
  work in its way runs, to the groups of its queue placed after its holder (lower
  priority, or equal and newer: Kueue's LowerOrNewerEqualPriority), if the holder may
  evict at all: once nothing else is in its way, the holder takes the room back by
  evicting them (`Preemptions._take_back`), so the gang starts later than if the room
  had stood idle only by the time the evictions take. Kept closed, the room stood idle
  until the last of the work in its way ended: in the simulator (small-synthetic, gangs
  up to half the cluster) that cost more GPU allocation and wait than the reservation
  won (bench/README).
Groups are placed in order of decreasing priority, so a hold is opened just for the
group being placed when that group may use it, and closed again afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.core.model.names import GroupKey
from phalanx.core.model.nomination import RESERVED, Nomination
from phalanx.core.placement.state import CycleState


@dataclass(frozen=True, slots=True)
class Hold:
    priority: int
    nodes: tuple[int, ...]
    nomination: Nomination
    queue: str
    creation: float
    lends: bool
    """A starvation reservation whose holder may take its room back (it may evict)."""

    def lends_to(self, holder: GroupKey, group: Placed) -> bool:
        """Is `group` placed after the holder in its queue, so that the holder may take
        back the reserved room it is lent (`Opener.may_use`, `Preemptions._take_back`)?"""
        if not self.lends or self.nomination.reason != RESERVED or group.queue != self.queue:
            return False
        after = (-group.priority, group.creation, group.key)
        return after > (-self.priority, self.creation, holder)


@dataclass(slots=True)
class Placed:
    """A group as placement orders it within its queue (`admission`). Not frozen, though
    never changed: one is made for each group placed or tried, as `Opener` is (a frozen
    dataclass's `__init__` sets each field by `object.__setattr__`)."""

    key: GroupKey
    queue: str
    priority: int
    creation: float


@dataclass(slots=True)
class Opener:
    """The group being placed, as far as holds are concerned (never changed)."""

    group: GroupKey
    priority: int
    queue: str
    preempts: bool
    placed: Placed | None
    """The group as its queue orders it; None for a lone pod, which is never lent room
    (`Hold.lends_to`): it has no group to tell it by when the room is taken back."""

    def may_use(self, holder: GroupKey, hold: Hold) -> bool:
        if holder == self.group:
            return True
        if hold.priority >= self.priority:
            return self.placed is not None and hold.lends_to(holder, self.placed)
        if hold.nomination.reason == RESERVED:
            return True
        return self.preempts and hold.queue == self.queue


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

    def open_for(self, opener: Opener) -> None:
        """Let this group use its own hold and the holds it may enter (`Opener.may_use`),
        and no other. Holds open for the group before that this one may use too stay
        open: consecutive groups of a queue mostly may use the same ones (a reservation
        lends its room to each group after its holder), and closing and reopening them
        around every group refreshed every shape's count on their nodes twice per group
        (~5,000 times in a late Alibaba simulator cycle). The holds are the same at every
        placement either way."""
        wanted = [holder for holder, hold in self.by_group.items() if opener.may_use(holder, hold)]
        for holder in self._open:
            if holder not in wanted:
                for node in self.by_group[holder].nodes:
                    self.state.hold(node)
        for holder in wanted:
            if holder not in self._open:
                for node in self.by_group[holder].nodes:
                    self.state.hold(node, -1)
        self._open = wanted

    def close(self) -> None:
        """Every hold back on (for what is placed after the groups: elastic pods)."""
        for holder in self._open:
            for node in self.by_group[holder].nodes:
                self.state.hold(node)
        self._open.clear()

    def nodes_of(self, group: GroupKey) -> frozenset[int]:
        hold = self.by_group.get(group)
        return frozenset(hold.nodes) if hold is not None else frozenset()
