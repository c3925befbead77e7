"""Starvation reservations and the holds they keep, for `Preemptions`: a gang that waited
past `starvation_seconds` gets room reserved where the least running work stands in its
way; the reservation is renewed past its timeout while that work is all that is in its
way (`_renewed`), its room is lent to the groups of its queue placed after it
(`Hold.lends_to`) and taken back once nothing else is in its way (`_take_back`).

`Reservations` is the reservation half of `Preemptions` (`preemption/cycle.py`), which
sets the fields it declares; kept apart as the one place reservations are decided.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from phalanx.core.admission.members import GroupWork
from phalanx.core.model.config import SchedulerConfig
from phalanx.core.model.eviction import Eviction
from phalanx.core.model.names import GroupKey, NodeName
from phalanx.core.model.nomination import RESERVED, Nomination
from phalanx.core.model.status import Problem
from phalanx.core.placement.gang import GangRequest
from phalanx.core.placement.routes import Route
from phalanx.core.placement.state import CycleState
from phalanx.core.preemption.find import Finder, Found
from phalanx.core.preemption.holds import Hold, Holds, Placed
from phalanx.core.preemption.rules import may_preempt
from phalanx.core.preemption.search import Cost, work_cost
from phalanx.core.preemption.units import Unit, build_units, priority_bounds, within_spare


@dataclass(slots=True)
class Failure:
    """What one gang that could not be placed should wait for, and say. `why` works
    out the reason on first call (costly; not needed when evictions make room). Not
    frozen, though never changed, as `GangRequest`."""

    work: GroupWork
    request: GangRequest
    route: Route
    why: Callable[[], Problem]

    @property
    def problem(self) -> Problem:
        return self.why()


class Reservations:
    """The reservation half of `Preemptions`; its `__init__` sets these fields."""

    _priorities: dict[GroupKey, int]
    _finder: Finder | None
    _by_group: dict[GroupKey, list[Unit]] | None
    state: CycleState
    config: SchedulerConfig
    now: float
    holds: Holds
    evictions: list[Eviction]
    nominations: dict[GroupKey, Nomination]
    _taken: set[int]
    _near: dict[frozenset[str], tuple[Unit, ...]]
    _no_room: tuple[int, set[object]]

    @property
    def finder(self) -> Finder:
        """Units and their domains, made when the first gang cannot be placed (the units
        themselves only once a gang may evict: `Claim.may_take`)."""
        if self._finder is None:
            index, priorities = self.state.index, self._priorities
            bounds = priority_bounds(index, priorities)
            build = partial(build_units, index, priorities, self.now, self.config.weigh_work_lost)
            self._finder = Finder(self.state, build, bounds)
        return self._finder

    @property
    def units(self) -> tuple[Unit, ...]:
        return self.finder.units

    def _work_cost(self, units: Sequence[Unit]) -> Cost:
        return work_cost(units, self.config.weigh_work_lost)

    def _groups(self) -> dict[GroupKey, list[Unit]]:
        """Units by group, built once: the units are fixed once built, and a cluster
        whose running pods belong to no group must not rebuild an empty map per call
        (none-fit asked 1,000 times: a third of its cycle)."""
        if self._by_group is None:
            self._by_group = {}
            for other in self.units:
                if other.group is not None:
                    self._by_group.setdefault(other.group, []).append(other)
        return self._by_group

    def _hold_of(self, work: GroupWork, nodes: tuple[int, ...], held: Nomination) -> Hold:
        """The group's hold on `nodes`; a reservation of a group that may evict lends
        its room (`Hold.lends_to`): it can take it back."""
        lends = self.config.preemption and may_preempt(self.state.index, class_of(work),
                                                       own_policy(work))
        return Hold(work.priority, nodes, held, work.queue, work.creation, lends)

    def _renewed(self, holder: GroupKey, hold: Hold) -> Nomination | None:
        """A starvation reservation past its time, renewed in place while everything in
        its way was there when it was taken, or was lent the room since (and is taken
        back once nothing else is in the way: `_take_back`): the room frees up for sure.
        Released (for one cycle, then chosen afresh) once any other pod started there
        since (a group of higher priority may use the room): it may no longer free up.
        Without renewal a 128-GPU gang behind hours-long jobs lost its room every 300 s
        to small groups and never started in the simulator."""
        held = hold.nomination
        if held.reason != RESERVED or not hold.nodes:
            return None
        inside = set(hold.nodes)
        near = frozenset(self.state.index.nodes[i].name for i in hold.nodes)
        if any(
            unit.group != holder
            and unit.started > held.since
            and not inside.isdisjoint(unit.nodes)
            and not self._on_loan(unit, holder, hold)
            for unit in self._units_near(near)
        ):
            return None
        timeout = self.config.nomination_timeout_seconds
        return Nomination(held.nodes, RESERVED, held.since, self.now + timeout)

    def _units_near(self, near: frozenset[str]) -> tuple[Unit, ...]:
        """`build_units` of the groups with a pod on these nodes, built once a cycle per
        set of nodes: a reservation's renewal (`_renewed`) and its take-back
        (`_take_back`) each asked about its nodes, for the same units (they depend on
        the snapshot and the groups' priorities alone)."""
        units = self._near.get(near)
        if units is None:
            units = self._near[near] = build_units(
                self.state.index, self._priorities, self.now, self.config.weigh_work_lost, near
            )
        return units

    def _on_loan(self, unit: Unit, holder: GroupKey, hold: Hold) -> bool:
        """Was the unit, which runs on the reservation's nodes, lent the room (started
        since it was reserved, by a group the holder lends to)?"""
        key = unit.group
        group = self.state.index.groups.get(key) if key is not None else None
        if key is None or group is None or unit.started <= hold.nomination.since:
            return False
        return hold.lends_to(holder, Placed(key, unit.queue, unit.priority, group.creation))

    def _take_back(self, failure: Failure) -> Found | None:
        """A gang holding a starvation reservation, once nothing but the groups it lent
        the room to is in its way (`Hold.lends_to`): evict them and take the room. While
        other work is still in the way, none is evicted: the loans cost the gang nothing.
        The search sees only the units on the held nodes (as `_renewed`): building every
        unit of a busy cluster each cycle the gang waits would cost more than the search."""
        holder = failure.work.key
        hold = self.holds.by_group.get(holder)
        if hold is None or not hold.lends or hold.nomination.reason != RESERVED:
            return None
        index, inside = self.state.index, frozenset(hold.nodes)
        near = frozenset(index.nodes[i].name for i in hold.nodes)
        taken = {_identity(u) for u in self.units if id(u) in self._taken} if self._taken else set()
        loans = tuple(
            u
            for u in self._units_near(near)
            if _identity(u) not in taken
            and not inside.isdisjoint(u.nodes)
            and self._on_loan(u, holder, hold)
        )
        if not loans:
            return None
        finder = Finder(self.state, lambda: loans, self.finder.bounds)
        finder.leaving = list(self.finder.leaving)
        found = finder.find(
            failure.request, failure.route, lambda _: True, within_spare, self._work_cost,
            prefer=inside,
        )  # fmt: skip
        if found is None or not found.units:
            return None
        chosen = {_identity(u) for u in found.units}
        return replace(found, units=tuple(u for u in self.units if _identity(u) in chosen))

    def _expired(self, work: GroupWork) -> bool:
        """The gang's recorded hold ran out and was not renewed (`_renewed`)."""
        held = work.group.nomination if work.group is not None else None
        return held is not None and not held.live(self.now) and work.key not in self.nominations

    def _hold(self, work: GroupWork, nodes: tuple[int, ...], reason: str) -> Nomination:
        """Hold `nodes` for the group, keeping the times of a hold it already has."""
        names = tuple(NodeName(self.state.index.nodes[i].name) for i in nodes)
        old = self.nominations.get(work.key)
        if old is not None and old.reason == reason and set(old.nodes) & set(names):
            nomination = Nomination(names, reason, old.since, old.expires)
        else:
            timeout = self.config.nomination_timeout_seconds
            nomination = Nomination(names, reason, self.now, self.now + timeout)
        self.holds.add(work.key, self._hold_of(work, nodes, nomination))
        self.nominations[work.key] = nomination
        return nomination

    def _keep_reservation(self, work: GroupWork, problem: Problem) -> Problem:
        held = self.nominations.get(work.key)
        if held is None:
            return problem
        if held.reason != RESERVED:
            self.holds.drop(work.key)
            del self.nominations[work.key]
            return problem
        return Problem(problem.code, problem.reason, problem.message + _reserved_note(held))

    def _reserve(self, failure: Failure, problem: Problem) -> Problem:
        """Starvation protection: hold the room where least running work is in the way."""
        work = failure.work
        held = self.nominations.get(work.key)
        if held is not None and held.reason == RESERVED:
            return self._keep_reservation(work, problem)
        if held is not None:  # a preemption hold that no longer leads anywhere
            self.holds.drop(work.key)
            del self.nominations[work.key]
        waited = self.now - work.creation
        if waited < self.config.starvation_seconds or self._reserving():
            return problem
        if not self._passed_by(work):
            return problem
        key, fruitless = self._room_key(failure), self._no_room_now()
        if key in fruitless:
            return problem
        taken = self._taken
        found = self.finder.find(
            failure.request,
            failure.route,
            lambda unit: id(unit) not in taken and unit.group != work.key,
            lambda units: True,
            self._work_cost,
            phases=(True,),
        )
        if found is None:
            if key is not None:  # the search put the state back as it was
                self._no_room = (self.state.generation, fruitless | {key})
            return problem
        nomination = self._hold(work, found.nodes, RESERVED)
        return Problem(problem.code, problem.reason, problem.message + _reserved_note(nomination))

    def _room_key(self, failure: Failure) -> object | None:
        """What the reservation search depends on besides the state: the gang's pod
        shapes and rules, its route, and the units taken or leaving so far; None for a
        gang with running units (they are not in its own way). Seed 1 of the Alibaba
        simulation searched for 142 and 165 starving single-pod gangs in two cycles (34
        and 36 shapes), none of which found room until the last: 5-10 s a cycle."""
        request = failure.request
        if failure.work.key in self._groups():
            return None
        return (
            request.shapes, request.demand, request.topology, request.limit,
            request.preferred, request.sub_group, request.spread, request.fragmentation,
            failure.route, len(self.finder.leaving), len(self._taken),
        )  # fmt: skip

    def _no_room_now(self) -> set[object]:
        """`_room_key`s of searches that found no room, while the state is as it was
        after them (the search itself puts back what it tries)."""
        generation, keys = self._no_room
        if generation != self.state.generation:
            keys = set()
            self._no_room = (self.state.generation, keys)
        return keys

    def _passed_by(self, work: GroupWork) -> bool:
        """Was a group of equal or lower priority placed while this gang waited (a pod
        of it started since the gang was created)? Only then is the gang starving: a
        gang that waits behind higher-priority work alone waits its turn, and a
        reservation would only keep out the groups it outranks anyway."""
        return any(
            unit.priority <= work.priority and unit.started > work.creation
            and unit.group != work.key
            for unit in self.units
        )  # fmt: skip

    def _reserving(self) -> bool:
        """One reservation at a time: the first starving gang (highest priority, then
        oldest) holds room; reserving for every starving gang could hold the whole
        cluster while each waits for the others' room."""
        return any(held.reason == RESERVED for held in self.nominations.values())


def _identity(unit: Unit) -> tuple[str, bool]:
    """What tells a unit apart across two builds of the units (`_take_back`)."""
    return unit.key, unit.whole


def own_policy(work: GroupWork) -> str | None:
    """The group's own preemptionPolicy (Kubernetes' PodGroup), if it says one."""
    return work.group.preemption_policy if work.group is not None else None


def class_of(work: GroupWork) -> str | None:
    if work.group is not None and work.group.priority_class_name:
        return work.group.priority_class_name
    for pod in work.waiting:
        if pod.priority_class_name:
            return pod.priority_class_name
    return None


def _reserved_note(nomination: Nomination) -> str:
    return f"; it waited long: {len(nomination.nodes)} nodes are reserved for it"
