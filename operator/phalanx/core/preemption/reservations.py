"""Reservations and the holds they keep, for `Preemptions`.

With time (runtime limits) to plan with, the first gang of each queue that cannot be
placed gets room reserved at once where it can start earliest (`timeline.estimate`),
from that start: the nodes `place_gang` would use once the work ending first is gone.
Without a known start (work with no limit in its way), a gang that waited past
`starvation_seconds` while groups of equal or lower priority were placed gets room
where the least running work stands in its way, of unknown start. Either is renewed
past its timeout while what is in its way was there when it was taken, or was let in
by backfill since (`_renewed`). Groups of lower priority may use the room only if
their own limit ends by its start (`Hold.takes_backfill`); nothing let in is ever
evicted for it.

`Reservations` is the reservation half of `Preemptions` (`preemption/cycle.py`), which
sets the fields it declares; kept apart as the one place reservations are decided.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from operator import attrgetter

from phalanx.core.admission.admit import queue_history
from phalanx.core.admission.members import GroupWork
from phalanx.core.model.clock import clock_time
from phalanx.core.model.config import SchedulerConfig
from phalanx.core.model.eviction import Eviction
from phalanx.core.model.inputs import PodInfo
from phalanx.core.model.names import GroupKey, NodeName
from phalanx.core.model.nomination import RESERVED, Nomination
from phalanx.core.model.status import Problem
from phalanx.core.placement.gang import GangRequest
from phalanx.core.placement.routes import Route
from phalanx.core.placement.state import CycleState
from phalanx.core.preemption.find import Finder, Found
from phalanx.core.preemption.holds import Hold, Holds, Opener
from phalanx.core.preemption.rules import may_preempt
from phalanx.core.preemption.search import Cost, work_cost
from phalanx.core.preemption.units import Unit, build_units, priority_bounds
from phalanx.core.timeline.estimate import (
    Occupant,
    Start,
    earliest_start,
    placed_pods,
    running_occupants,
)
from phalanx.core.timeline.limits import limit_of


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
    _occupants: list[Occupant] | None
    _closed_for: GroupKey | None

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
        return Hold(work.priority, nodes, held, work.queue, work.creation)

    def _renewed(self, holder: GroupKey, hold: Hold) -> Nomination | None:
        """A reservation past its time, renewed in place while everything in its way was
        there when it was taken, or was let in by backfill since (it ends by the
        reservation's start): the room frees up for sure. Released (for one cycle, then
        chosen afresh) once any other pod started there since (a group of higher
        priority may use the room): it may no longer free up. Without renewal a 128-GPU
        gang behind hours-long jobs lost its room every 300 s to small groups and never
        started in the simulator. Not renewed a term past its start without the gang
        started: something unplanned is in its way (two reservations of one room, each
        keeping the other's gang out), and it is planned afresh after a cycle."""
        held = hold.nomination
        if held.reason != RESERVED or not hold.nodes or self._behind(hold.queue, hold.creation):
            return None
        timeout = self.config.nomination_timeout_seconds
        if held.start is not None and self.now >= held.start + timeout:
            return None  # a term past its start and not started: planned afresh
        inside = set(hold.nodes)
        near = frozenset(self.state.index.nodes[i].name for i in hold.nodes)
        if any(
            unit.group != holder
            and unit.started > held.since
            and not inside.isdisjoint(unit.nodes)
            and not hold.takes_backfill(self._end_of(unit))
            for unit in self._units_near(near)
        ):
            return None
        return replace(held, expires=self.now + timeout)

    def _end_of(self, unit: Unit) -> float | None:
        """When the unit reaches its group's runtime limit (None: no limit)."""
        index = self.state.index
        group = index.groups.get(unit.group) if unit.group is not None else None
        limit = limit_of(group, index.queues)
        return unit.started + limit if limit is not None and unit.ran else None

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

    def _expired(self, work: GroupWork) -> bool:
        """The gang's recorded hold ran out and was not renewed (`_renewed`)."""
        held = work.group.nomination if work.group is not None else None
        return held is not None and not held.live(self.now) and work.key not in self.nominations

    def _hold(
        self, work: GroupWork, nodes: tuple[int, ...], reason: str, start: float | None = None
    ) -> Nomination:
        """Hold `nodes` for the group, keeping the times of a hold it already has."""
        names = tuple(NodeName(self.state.index.nodes[i].name) for i in nodes)
        old = self.nominations.get(work.key)
        if old is not None and old.reason == reason and set(old.nodes) & set(names):
            nomination = Nomination(names, reason, old.since, old.expires, old.start)
        else:
            timeout = self.config.nomination_timeout_seconds
            nomination = Nomination(names, reason, self.now, self.now + timeout, start)
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
        """Hold room for the gang: from its expected start, if it is the first of its
        queue that waits and its start is known; else, once it starves, where the least
        running work is in its way."""
        work = failure.work
        held = self.nominations.get(work.key)
        if held is not None and held.reason == RESERVED:
            self._move_earlier(failure, held)
            return self._keep_reservation(work, problem)
        if held is not None:  # a preemption hold that no longer leads anywhere
            self.holds.drop(work.key)
            del self.nominations[work.key]
        holder = self._reserving(work.queue)
        if holder is not None and not self._ahead(work, holder):
            return problem
        with self._without_backfill(work):  # once for both searches, not once each
            start = self._start_of(failure)
            found = None if start.at is not None and start.placement is not None else (
                self._starving_room(failure))
        if start.at is not None and start.placement is not None:
            nodes = tuple(sorted({node for _, node in start.placement.assignments}))
            nomination = self._hold(work, nodes, RESERVED, start.at)
            return replace(problem, message=problem.message + _reserved_note(nomination))
        if found is None:
            return problem
        nomination = self._hold(work, found.nodes, RESERVED)
        return replace(problem, message=problem.message + _reserved_note(nomination))

    def _move_earlier(self, failure: Failure, held: Nomination) -> None:
        """A reservation follows the work in its way as it ends before its limits: its
        start is worked out again every cycle, and where the gang can now start earlier,
        the reservation moves there (as Slurm's backfill plans afresh each pass). It never
        moves later: what was let in by backfill ends by the old start, so the promise
        holds; only a group of higher priority or a lost node could push it back."""
        if held.start is None:
            return
        work = failure.work
        self.holds.drop(work.key)
        start = self._start_of(failure)
        if start.at is not None and start.placement is not None and start.at < held.start:
            nodes = tuple(sorted({node for _, node in start.placement.assignments}))
            names = tuple(NodeName(self.state.index.nodes[i].name) for i in nodes)
            moved = replace(held, nodes=names, start=start.at)
        else:
            position = self.state.index.node_position
            nodes = tuple(sorted(position[n] for n in held.nodes if n in position))
            moved = held
        self.holds.add(work.key, self._hold_of(work, nodes, moved))
        self.nominations[work.key] = moved

    def _starving_room(self, failure: Failure) -> Found | None:
        """Starvation protection where no start is known: the room where least running
        work is in the way, once the gang starves (None: it does not, or there is none).
        Searched with the reservations it may enter by backfill alone closed (the
        caller's `_without_backfill`)."""
        work = failure.work
        waited = self.now - work.creation
        if (
            waited < self.config.starvation_seconds
            or not self._passed_by(work)
            or self._behind(work.queue, work.creation)
        ):
            return None
        key, fruitless = self._room_key(failure), self._no_room_now()
        if key in fruitless:
            return None
        taken = self._taken
        found = self.finder.find(
            failure.request,
            failure.route,
            lambda unit: id(unit) not in taken and unit.group != work.key,
            lambda units: True,
            self._work_cost,
            phases=(True,),
        )
        if found is None and key is not None:  # the search put the state back as it was
            self._no_room = (self.state.generation, fruitless | {key})
        return found

    def _start_of(self, failure: Failure) -> Start:
        """Where and when the gang can start earliest, from the runtime limits of what
        runs, with the reservations it could enter by backfill alone closed: those let
        it in now, to leave before their own start, not at a later start of its own.
        Planned through them, two queues' 128-GPU gangs reserved the same block from the
        same start, each then kept out by the other's hold, and both waited on past it
        for 15 hours in the simulator."""
        if failure.request.anchors:
            return Start(None, None, ())
        with self._without_backfill(failure.work):
            occupants = self.occupants_now() + self._reserved_ends(failure.work.key)
            occupants.sort(key=attrgetter("end"))
            return earliest_start(self.state, failure.request, occupants, self.now)

    def _reserved_ends(self, key: GroupKey) -> list[Occupant]:
        """Other gangs' reservations closed to this gang, each as room that frees when
        its holder, started at its reservation's start, reaches its limit: the gang may
        be planned there after it, where closed for ever it had no start at all while
        the rest of the cluster ran work with no limit (in the simulator a 128-GPU gang
        then held the other half of the cluster with no start for hours)."""
        index, found = self.state.index, []
        for holder, hold in self.holds.by_group.items():
            start = hold.nomination.start
            if holder == key or hold.nomination.reason != RESERVED or start is None:
                continue
            if holder in self.holds.open_to:
                continue
            limit = limit_of(index.groups.get(holder), index.queues)
            if limit is not None and hold.nodes:
                found.append(Occupant(holder, (), start + limit, hold.nodes))
        return found

    @contextmanager
    def _without_backfill(self, work: GroupWork) -> Iterator[None]:
        """The reservations the gang may enter by backfill alone closed, and opened
        again after: room for a reservation of its own is never found in another's."""
        if self._closed_for == work.key:  # closed already, by an enclosing call
            yield
            return
        opener = self._opener(work)
        closing = self.holds.backfills(opener)
        if closing:
            self.holds.open_for(opener, backfill=False)
        self._closed_for = work.key
        try:
            yield
        finally:
            self._closed_for = None
            if closing:
                self.holds.open_for(opener)

    def _opener(self, work: GroupWork) -> Opener:
        """The group being placed, for `Holds.open_for`."""
        preempts = may_preempt(self.state.index, class_of(work), own_policy(work))
        limit = limit_of(work.group, self.state.index.queues)
        ends_by = self.now + limit if limit is not None else None
        held = self.nominations.get(work.key)
        reserved = held is not None and held.reason == RESERVED
        return Opener(work.key, work.priority, work.queue, preempts, ends_by,
                      self.config.backfill, reserved)  # fmt: skip

    def occupants_now(self) -> list[Occupant]:
        """What leaves the cluster, by end: pods leaving (terminating, or victims of this
        cycle) now, then the running groups with a runtime limit."""
        leaving = list(self.finder.leaving)
        gone = {pod.key for pod, _ in leaving}
        occupants = [Occupant(None, tuple(leaving), self.now)] if leaving else []
        for occupant in self.occupants:
            pods = tuple(pair for pair in occupant.pods if pair[0].key not in gone)
            if pods:
                occupants.append(replace(occupant, pods=pods) if gone else occupant)
        return occupants

    @property
    def occupants(self) -> list[Occupant]:
        """The running gangs that leave at their runtime limit, by end (built once a cycle;
        the groups placed this cycle are added by `placed`)."""
        if self._occupants is None:
            self._occupants = running_occupants(self.state.index, self.now)
        return self._occupants

    def placed(self, work: GroupWork, bound: Sequence[tuple[PodInfo, int]]) -> None:
        """A group placed this cycle: it leaves at its limit from now, if it has one."""
        limit = limit_of(work.group, self.state.index.queues)
        if limit is not None and bound and self._occupants is not None:
            occupant = Occupant(work.key, placed_pods(self.state, bound), self.now + limit)
            bisect.insort(self._occupants, occupant, key=attrgetter("end"))

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

    def _behind(self, queue: str, since: float) -> bool:
        """Is the queue behind one with less decayed usage, whose groups started since
        `since`? Fair sharing over time serves that queue first until the usages even
        out, so a gang here waits its turn, as behind higher priority: it is not
        starving, and a reservation (taken or renewed) would keep the room from the
        queue owed it (in `python -m bench.sim.fair_share`, a team that had the cluster
        for a day still took some of the room freed for the team that had none). Never
        at half-life 0: no queue has usage, and reservations are as they were."""
        history = queue_history(self.state.index, self.now, self.config.usage_half_life_seconds)
        if not history:
            return False
        own = history.get(queue, 0.0)
        return any(
            history.get(unit.queue, 0.0) < own and unit.started > since for unit in self.units
        )

    def _reserving(self, queue: str) -> GroupKey | None:
        """The gang of the queue first in line (priority, then age) of those holding a
        reservation, if any. A gang behind it reserves nothing: reserving for every
        waiting gang could hold the whole cluster while each waits for the others' room."""
        first: tuple[int, float, GroupKey] | None = None
        for key, held in self.nominations.items():
            hold = self.holds.by_group.get(key)
            if held.reason == RESERVED and hold is not None and hold.queue == queue:
                mine = (-hold.priority, hold.creation, key)
                first = mine if first is None or mine < first else first
        return first[2] if first is not None else None

    def _ahead(self, work: GroupWork, holder: GroupKey) -> bool:
        """Is the gang ahead of every holder of its queue's reservations in the order
        groups are placed (priority, then age)? It then reserves too, planned after the
        room held for them (`_reserved_ends`), which keep theirs and their promise: a
        gang first in line whose own hold was released for a cycle (`_expired`) found the
        queue's one reservation taken by the next gang, and in the simulator a 128-GPU gang
        then waited 22.6 h, one younger gang after another holding the queue's room (10.0 h
        without backfill); taking it back from them broke their promised starts."""
        hold = self.holds.by_group[holder]
        mine = (-work.priority, work.creation, work.key)
        return mine < (-hold.priority, hold.creation, holder)

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
    count = len(nomination.nodes)
    if nomination.start is None:
        return f"; it waited long: {count} nodes are reserved for it"
    when = clock_time(nomination.start)
    return f"; {count} nodes are reserved for it from {when} UTC"
