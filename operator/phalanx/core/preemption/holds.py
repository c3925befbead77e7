"""Nominated room, held in the cycle state.

A hold keeps every group of lower or equal priority off its nodes. Who else may use it
depends on how the room came to be free:
- room freed by evictions (Preempting) is open only to groups that could evict the
  holder itself once it runs: of its queue, of strictly higher priority, allowed to
  preempt. A group of another queue could not, so giving it the room only sends the
  holder evicting again, and the victims' work is lost for nothing (in the simulator a
  team's high-priority jobs took the room another team had reclaimed, cycle after cycle);
- a reservation (Reserved) evicted nobody: groups of strictly higher priority may use it,
  as they would any free room; a group of lower or equal priority only if its runtime
  limit ends by the reservation's `start` (backfill, as Slurm's: it is gone before the
  holder can start, so it never delays it), when backfill is on. A group with no limit
  never does; a reservation of unknown start (work with no limit in its way) takes
  a group that ends by the end of the hold's current term (it is renewed term by term),
  so the gang waits at most a term once that work is gone. (It took any group with a
  limit before: in the simulator two 128-GPU gangs held the whole cluster for ten
  hours while the groups let in kept it full, and waited 6 h longer than without
  backfill.) Nothing lent is ever taken back: the reservation never
  evicts what it let in (before, a reservation lent its room to its own queue and took it
  back by evicting them; in the simulator that cost 33-117 GPU-hours of work on
  small-synthetic).
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

    def takes_backfill(self, ends_by: float | None) -> bool:
        """May a group of lower or equal priority that ends by `ends_by` (None: no limit)
        use this room? Only a reservation's, and only if it is gone by its start."""
        if self.nomination.reason != RESERVED or ends_by is None:
            return False
        start = self.nomination.start
        return ends_by <= (start if start is not None else self.nomination.expires)


@dataclass(slots=True)
class Opener:
    """The group being placed, as far as holds are concerned. Not frozen, though never
    changed: one is made for each group placed or tried (a frozen dataclass's `__init__`
    sets each field by `object.__setattr__`). `ends_by`: when it would reach its runtime
    limit if placed now (None: no limit); `backfill`: backfill is on; `reserved`: the group
    holds a reservation of its own (a reservation planned after it counted on it leaving
    by its limit, so it may use that room until then, backfill or not: without it, in
    phalanx-nobackfill, two gangs of one queue each kept the other off one node)."""

    group: GroupKey
    priority: int
    queue: str
    preempts: bool
    ends_by: float | None
    backfill: bool
    reserved: bool = False

    def may_use(self, holder: GroupKey, hold: Hold) -> bool:
        if holder == self.group:
            return True
        if hold.priority >= self.priority:
            return (self.backfill or self.reserved) and hold.takes_backfill(self.ends_by)
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

    def open_for(self, opener: Opener, backfill: bool = True) -> None:
        """Let this group use its own hold and the holds it may enter (`Opener.may_use`),
        and no other; without `backfill`, not those it may enter by backfill alone
        (`Opener.backfills`). Holds open for the group before that this one may use too stay
        open: consecutive groups mostly may use the same ones (a reservation takes every
        group that ends before its start), and closing and reopening them
        around every group refreshed every shape's count on their nodes twice per group
        (~5,000 times in a late Alibaba simulator cycle). The holds are the same at every
        placement either way."""
        wanted = [holder for holder, hold in self.by_group.items() if opener.may_use(holder, hold)]
        if not backfill:
            wanted = [h for h in wanted if not self._backfill_only(opener, h)]
        for holder in self._open:
            if holder not in wanted:
                for node in self.by_group[holder].nodes:
                    self.state.hold(node)
        for holder in wanted:
            if holder not in self._open:
                for node in self.by_group[holder].nodes:
                    self.state.hold(node, -1)
        self._open = wanted

    def _backfill_only(self, opener: Opener, holder: GroupKey) -> bool:
        return holder != opener.group and self.by_group[holder].priority >= opener.priority

    def backfills(self, opener: Opener) -> bool:
        """Is some hold open to the group by backfill alone (another group's reservation
        of equal or higher priority that it ends before)?"""
        return any(
            self._backfill_only(opener, holder) and opener.may_use(holder, hold)
            for holder, hold in self.by_group.items()
        )

    def close(self) -> None:
        """Every hold back on (for what is placed after the groups: elastic pods)."""
        for holder in self._open:
            for node in self.by_group[holder].nodes:
                self.state.hold(node)
        self._open.clear()

    @property
    def open_to(self) -> tuple[GroupKey, ...]:
        """The holders whose holds are open now (to the group being placed)."""
        return tuple(self._open)

    def nodes_of(self, group: GroupKey) -> frozenset[int]:
        hold = self.by_group.get(group)
        return frozenset(hold.nodes) if hold is not None else frozenset()
