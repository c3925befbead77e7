"""Preemption, reclaim and starvation reservations inside one scheduling cycle.

`run_cycle` places groups in order of decreasing priority. Around each placement it
opens the holds this group may use; when a gang cannot be placed, `Preemptions.failed`
looks for victims (whole gangs, elastic pods first) whose eviction makes it fit, holds
the room it would use, and records the evictions. A gang its queue's capability has no
room for is offered `over_capability` by admission: lower-priority gangs of its queue
that give that room back, then the same search. The gang itself is not bound in that
cycle: its room is still occupied until the victims are gone. A gang that waited past
`starvation_seconds` gets a reservation where the least running work stands in its way
(one such reservation at a time), once a group of equal or lower priority was placed
while it waited; it is renewed past its timeout while that work is all that is in its
way (`_renewed`). Meanwhile its room is lent to the groups of its queue placed after it
(`Hold.lends_to`), and taken back from them once nothing else is in its way
(`_take_back`): the room does not stand idle while the work in its way ends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

from phalanx.core.admission.admit import OverCapability
from phalanx.core.admission.members import GroupWork
from phalanx.core.admission.queues import QueueLedger, Shortfall
from phalanx.core.model.config import SchedulerConfig
from phalanx.core.model.eviction import Eviction, EvictionReason
from phalanx.core.model.names import GroupKey, NodeName
from phalanx.core.model.nomination import PREEMPTING, RESERVED, Nomination
from phalanx.core.model.status import Problem, Reason, StatusCode
from phalanx.core.placement.gang import GangRequest
from phalanx.core.placement.routes import Route
from phalanx.core.placement.state import CycleState
from phalanx.core.preemption.find import Finder, Found, never_fits
from phalanx.core.preemption.holds import Hold, Holds, Opener, Placed
from phalanx.core.preemption.rules import Claim, claim_for, may_preempt
from phalanx.core.preemption.search import cost_of, work_cost
from phalanx.core.preemption.units import Unit, build_units, priority_bounds, within_spare
from phalanx.core.preemption.why import PREEMPTION_OFF, capability_note, why_not
from phalanx.core.snapshot.resources import charged, total_of
from phalanx.topology.tree import ROOT_LEVEL


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


class Preemptions:
    def __init__(
        self,
        state: CycleState,
        works: Sequence[GroupWork],
        config: SchedulerConfig,
        now: float,
    ) -> None:
        self.state = state
        self.config = config
        self.now = now
        self._priorities = {w.key: w.priority for w in works}
        self._finder: Finder | None = None
        self.holds = Holds(state)
        self.evictions: list[Eviction] = []
        self.nominations: dict[GroupKey, Nomination] = {}
        self._taken: set[int] = set()
        self._room_held: set[GroupKey] = set()
        self._chains: dict[str, tuple[str, ...]] = {}
        self._notes: dict[object, str] = {}
        self._by_group: dict[GroupKey, list[Unit]] | None = None
        self._eligible: dict[object, frozenset[int]] = {}
        self._near: dict[frozenset[str], tuple[Unit, ...]] = {}
        self._no_room: tuple[int, set[object]] = (-1, set())
        """Gangs for which `_reserve` found no room, by `_room_key`, and the state's
        generation that holds for: the same search in the same state finds none again."""
        self._seed(works)

    def _seed(self, works: Sequence[GroupWork]) -> None:
        """Holds recorded in PodGroup status, while live and the gang still waits."""
        position = self.state.index.node_position
        for work in works:
            held = work.group.nomination if work.group is not None else None
            if held is None or not work.mandatory or work.problem:
                continue
            nodes = tuple(sorted(position[n] for n in held.nodes if n in position))
            hold = self._hold_of(work, nodes, held)
            if not held.live(self.now):
                renewed = self._renewed(work.key, hold)
                if renewed is None:
                    continue
                hold = replace(hold, nomination=renewed)
            if nodes:
                self.holds.add(work.key, hold)
                self.nominations[work.key] = hold.nomination

    def _hold_of(self, work: GroupWork, nodes: tuple[int, ...], held: Nomination) -> Hold:
        """The group's hold on `nodes`; a reservation of a group that may evict lends
        its room (`Hold.lends_to`): it can take it back."""
        lends = self.config.preemption and may_preempt(self.state.index, _class_of(work),
                                                       _own_policy(work))
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
            units = self._near[near] = build_units(self.state.index, self._priorities, near=near)
        return units

    def _on_loan(self, unit: Unit, holder: GroupKey, hold: Hold) -> bool:
        """Was the unit, which runs on the reservation's nodes, lent the room (started
        since it was reserved, by a group the holder lends to)?"""
        key = unit.group
        group = self.state.index.groups.get(key) if key is not None else None
        if key is None or group is None or unit.started <= hold.nomination.since:
            return False
        return hold.lends_to(holder, Placed(key, unit.queue, unit.priority, group.creation))

    @property
    def finder(self) -> Finder:
        """Units and their domains, made when the first gang cannot be placed (the units
        themselves only once a gang may evict: `Claim.may_take`)."""
        if self._finder is None:
            index, priorities = self.state.index, self._priorities
            bounds = priority_bounds(index, priorities)
            self._finder = Finder(self.state, partial(build_units, index, priorities), bounds)
        return self._finder

    @property
    def units(self) -> tuple[Unit, ...]:
        return self.finder.units

    def before(self, work: GroupWork) -> None:
        preempts = may_preempt(self.state.index, _class_of(work), _own_policy(work))
        placed = None if work.group is None else Placed(work.key, work.queue, work.priority,
                                                         work.creation)  # fmt: skip
        self.holds.open_for(Opener(work.key, work.priority, work.queue, preempts, placed))

    def after(self, work: GroupWork, placed: bool) -> None:
        """The group's hold goes once it is placed; the holds opened for it stay open
        until the next group's `before` (`Holds.open_for`) or `close`."""
        if placed:
            self.holds.drop(work.key)
            self.nominations.pop(work.key, None)

    def close(self) -> None:
        """Every hold on again, once the groups are placed."""
        self.holds.close()

    def holds_room(self, key: GroupKey) -> bool:
        """The gang was given room by evictions this cycle (or waits for pods leaving
        it): like a placed gang, it keeps what admission reserved in its queue."""
        return key in self._room_held

    def failed(self, failure: Failure, ledger: QueueLedger) -> Problem:
        """Evict for the gang if that makes it fit, else reserve or explain; returns
        the problem its decision reports."""
        work = failure.work
        if (
            failure.request.anchors
            or self._expired(work)
            or never_fits(failure.request, self.state)
        ):
            return self._not_evicting(failure)
        claim = claim_for(
            self.state.index, ledger, work.key, work.queue, work.priority, _class_of(work)
        )
        found = None
        if self.config.preemption:
            found = self._preempt(failure, claim)
            if found is None or not found.units:
                found = self._take_back(failure) or found
        if found is not None and (found.units or work.key in self.nominations):
            return self._nominate(failure, found, claim, ledger)
        problem = failure.problem  # worked out only now: evictions made no room
        if problem.code is not StatusCode.UNSCHEDULABLE:
            return self._keep_reservation(work, problem)
        explain = self.config.preemption and self.config.explain_preemption
        note = self._why_not(failure, claim, ledger) if explain else ""
        problem = Problem(problem.code, problem.reason, problem.message + note)
        return self._reserve(failure, problem)

    def over_capability(
        self,
        work: GroupWork,
        request: GangRequest,
        route: Route,
        over: OverCapability,
        ledger: QueueLedger,
    ) -> Problem | str:
        """A gang its queue's capability leaves no room for: evict gangs of its queue of
        lower priority that give back `over.excess` (Kueue's preemption within a
        ClusterQueue), plus whatever else of them the placement needs once they are gone,
        if it then fits. Returns the gang's problem when it evicts; otherwise (nothing
        evicted) why that does not help, to add to its message ("" if nothing to say)."""
        if not self.config.preemption or request.anchors or never_fits(request, self.state):
            return ""
        claim = claim_for(
            self.state.index, ledger, work.key, work.queue, work.priority, _class_of(work)
        )
        claim = replace(claim, reclaim=False)  # over its capability: above any guarantee
        if not claim.preempt:
            return self._explained(PREEMPTION_OFF)
        leaving = self._leaving_usage(work.queue)  # victims of earlier cycles, say
        excess = {r: a - leaving.get(r, 0) for r, a in over.excess.items() if a > leaving.get(r, 0)}
        ids = self._eligible_ids(claim)
        eligible = [u for u in self.units if id(u) in ids] if ids else []
        quota = _giving_back(eligible, excess)
        if quota is None:
            return self._capability_note(work, over.shortfall, eligible, excess)
        found = self._make_room(work, request, route, claim, quota)
        if found is None:
            return self._capability_note(work, over.shortfall, eligible, {})
        failure = Failure(work, request, route, lambda: _NO_PROBLEM)
        return self._nominate(failure, found, claim, ledger)

    def _make_room(
        self,
        work: GroupWork,
        request: GangRequest,
        route: Route,
        claim: Claim,
        quota: tuple[Unit, ...],
    ) -> Found | None:
        """With the units that give the quota back counted as gone, the cheapest further
        victims of the claim that make room for the gang; the quota's units included."""
        finder, before = self.finder, len(self.finder.leaving)
        finder.leave(quota)  # counted as gone while the room is searched
        failure = Failure(work, request, route, lambda: _NO_PROBLEM)
        taken = {id(other) for unit in quota for other in self._related(unit)}
        found = self._preempt(failure, claim, exclude=taken)
        del finder.leaving[before:]
        if found is None:
            return None
        return replace(found, units=quota + found.units, waiting=found.waiting)

    def _explained(self, note: str) -> str:
        """The note on why eviction does not help, if notes are wanted."""
        return note if self.config.explain_preemption else ""

    def _capability_note(
        self,
        work: GroupWork,
        shortfall: Shortfall,
        units: Sequence[Unit],
        excess: Mapping[str, int],
    ) -> str:
        """`capability_note`, if notes are wanted, unless priorities are not in use (as
        in `why_not`)."""
        if not self.config.explain_preemption:
            return ""
        if not self.state.index.eviction_refused and self.finder.only_priority(work.priority):
            return ""
        return capability_note(shortfall, work.queue, units, excess)

    def _leaving_usage(self, queue: str) -> dict[str, int]:
        """What terminating pods of the queue's groups still count against it: it is
        given back as they go, so it is not evicted for twice."""
        index = self.state.index
        pods = [
            pod
            for key, members in index.members.items()
            if (group := index.groups.get(key)) is not None and group.queue == queue
            for pod in members.pods
            if pod.terminating and pod.node_name and not pod.finished
        ]
        return total_of(charged(pod, index.node_by_name) for pod in pods)

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
            failure.request, failure.route, lambda _: True, within_spare, work_cost,
            prefer=inside,
        )  # fmt: skip
        if found is None or not found.units:
            return None
        chosen = {_identity(u) for u in found.units}
        return replace(found, units=tuple(u for u in self.units if _identity(u) in chosen))

    def _not_evicting(self, failure: Failure) -> Problem:
        """A gang tied to its running pods' nodes, or that no room could hold, keeps its
        reservation, if any; one whose hold expired is released for one cycle: others
        may take the room."""
        work, problem = failure.work, failure.problem
        expired = not failure.request.anchors and self._expired(work)
        if not expired or problem.code is not StatusCode.UNSCHEDULABLE:
            return self._keep_reservation(work, problem)
        return Problem(problem.code, problem.reason, problem.message + _EXPIRED)

    def _expired(self, work: GroupWork) -> bool:
        """The gang's recorded hold ran out and was not renewed (`_renewed`)."""
        held = work.group.nomination if work.group is not None else None
        return held is not None and not held.live(self.now) and work.key not in self.nominations

    def _preempt(
        self, failure: Failure, claim: Claim, exclude: frozenset[int] | set[int] = frozenset()
    ) -> Found | None:
        """Pods already terminating count as gone; a gang that needs no victims keeps
        (but never starts) a hold with them: room freed by ordinary terminations goes
        to whoever the next cycle places first."""
        if not (claim.preempt or claim.reclaim) and not self.finder.leaving:
            return None
        ids = self._eligible_ids(claim)
        if not ids and not self.finder.leaving:
            return None

        def eligible(unit: Unit) -> bool:
            return id(unit) in ids and id(unit) not in exclude

        within = partial(claim.within, chains=self._queue_chains())

        def allowed(units: Sequence[Unit]) -> bool:
            return within_spare(units) and within(units)

        prefer = self.holds.nodes_of(failure.work.key)
        own = claim.queue if claim.reclaim else None
        return self.finder.find(
            failure.request,
            failure.route,
            eligible,
            allowed,
            partial(cost_of, own=own),
            prefer=prefer,
            own=own,
        )

    def _eligible_ids(self, claim: Claim) -> frozenset[int]:
        """Units this claim may evict and nobody took yet (the same for every gang of
        one queue and priority, so kept until victims are taken); none, without building
        the units, when the priority bounds prove it (`Claim.may_take`)."""
        key = (claim.queue, claim.priority, claim.preempt, claim.reclaim, claim.closed,
               len(self._taken))  # fmt: skip
        ids = self._eligible.get(key)
        if ids is None:
            ids = frozenset()
            if claim.may_take(self.finder.bounds):
                taken, anyone = self._taken, replace(claim, group="")
                ids = frozenset(
                    id(u) for u in self.units if id(u) not in taken and anyone.reason(u) is not None
                )
            self._eligible[key] = ids
        if not ids:
            return ids
        own = self._groups().get(GroupKey(claim.group))
        return ids - {id(u) for u in own} if own else ids

    def _nominate(
        self, failure: Failure, found: Found, claim: Claim, ledger: QueueLedger
    ) -> Problem:
        """Evict the victims and hold their room. The victims' requests leave their
        queues' usage and the gang keeps its own (`holds_room`), so later gangs of this
        cycle see both queues as they will be: two gangs of a queue at its guarantee
        each reclaiming "the last" GPUs, or a queue reclaiming what another just
        reclaimed from it, was a swap loop in the simulator."""
        work, victims = failure.work, found.units
        for unit in victims:
            reason = claim.reason(unit)
            message = _eviction_message(work, reason)
            reason = reason or EvictionReason.PREEMPTED
            self.evictions.extend(
                Eviction(pod.key, unit.group, reason, work.key, message) for pod in unit.pods
            )
            self._taken.update(id(u) for u in self._related(unit))
            ledger.add(unit.queue, {r: -amount for r, amount in unit.requests.items()})
        self.finder.leave(victims)
        self._hold(work, found.nodes, PREEMPTING)
        self._room_held.add(work.key)
        where = self._where(failure.request.topology, found)
        if victims:
            message = f"preempting: evicts {_victims(victims)} to make room {where}"
            message += "; placed there once they are gone"
        else:
            message = f"waits for {found.waiting} terminating pods {where}; the room is held"
        return Problem(StatusCode.UNSCHEDULABLE, Reason.PREEMPTING, message)

    def _related(self, unit: Unit) -> list[Unit]:
        """The unit and every other unit of its group (whole gang and elastic pods)."""
        if unit.group is None:
            return [unit]
        return self._groups().get(unit.group, [unit])

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
            work_cost,
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

    def _why_not(self, failure: Failure, claim: Claim, ledger: QueueLedger) -> str:
        request = failure.request
        key = (
            request.demand, request.topology, request.limit, request.preferred,
            request.sub_group, claim.queue, claim.priority, claim.preempt, claim.reclaim,
            len(self._taken),
        )  # fmt: skip
        note = self._notes.get(key)
        if note is None:
            note = why_not(self.finder, failure.request, failure.route, claim, ledger, self._taken)
            self._notes[key] = note
        return note

    def _queue_chains(self) -> dict[str, tuple[str, ...]]:
        if not self._chains:
            ledger = QueueLedger(self.state.index.queues)
            self._chains = {name: ledger.chain(name) for name in self.state.index.queues}
            for unit in self.units:
                self._chains.setdefault(unit.queue, (unit.queue,))
        return self._chains

    def _where(self, topology: str | None, found: Found) -> str:
        if found.level == ROOT_LEVEL:
            return "in the cluster"
        tree = self.state.tree(topology)
        return f"in {tree.levels[found.level]} {tree.name(found.domain)}"


_EXPIRED = "; the room held for it was released: it did not free up in time"
TAKEN_BACK = "lent to it while it waited, is taken back"
"""In the message of an eviction by `_take_back` (bench.sim.trace counts them)."""
_NO_PROBLEM = Problem(StatusCode.UNSCHEDULABLE, Reason.QUEUE_CAPABILITY, "")


def _giving_back(units: Sequence[Unit], excess: Mapping[str, int]) -> tuple[Unit, ...] | None:
    """Elastic pods, else whole gangs (never both, as in `Finder.find`): the cheapest
    first (`Unit.order`) until their requests cover `excess`, then pruned, most
    expensive first, to a set none of which can be spared; None when they fall short."""
    for whole in (False, True):
        chosen: list[Unit] = []
        for unit in sorted((u for u in units if u.whole == whole), key=Unit.order):
            if _covers(chosen, excess):
                break
            if within_spare([*chosen, unit]):
                chosen.append(unit)
        if _covers(chosen, excess):
            for unit in reversed(list(chosen)):
                rest = [u for u in chosen if u is not unit]
                if _covers(rest, excess):
                    chosen = rest
            return tuple(chosen)
    return None


def _covers(units: Sequence[Unit], excess: Mapping[str, int]) -> bool:
    return all(sum(u.requests.get(r, 0) for u in units) >= a for r, a in excess.items())


def _identity(unit: Unit) -> tuple[str, bool]:
    """What tells a unit apart across two builds of the units (`_take_back`)."""
    return unit.key, unit.whole


def _own_policy(work: GroupWork) -> str | None:
    """The group's own preemptionPolicy (Kubernetes' PodGroup), if it says one."""
    return work.group.preemption_policy if work.group is not None else None


def _class_of(work: GroupWork) -> str | None:
    if work.group is not None and work.group.priority_class_name:
        return work.group.priority_class_name
    for pod in work.waiting:
        if pod.priority_class_name:
            return pod.priority_class_name
    return None


def _victims(units: Sequence[Unit]) -> str:
    pods = sum(len(u.pods) for u in units)
    groups = sorted({u.group or u.key for u in units})
    top = max(u.priority for u in units)
    named = ", ".join(groups[:5]) + (f" and {len(groups) - 5} more" if len(groups) > 5 else "")
    noun = "group" if len(groups) == 1 else "groups"
    pod_word = "pod" if pods == 1 else "pods"
    return f"{pods} {pod_word} of {len(groups)} {noun} ({named}; priority <= {top})"


def _eviction_message(work: GroupWork, reason: EvictionReason | None) -> str:
    """`reason` None: the unit was lent the room reserved for the gang (`_take_back`)."""
    if reason is None:
        return f"the room reserved for {work.key}, {TAKEN_BACK}"
    if reason is EvictionReason.RECLAIMED:
        return f"reclaimed for {work.key} by queue {work.queue}, which is below its guarantee"
    return f"preempted by {work.key} (priority {work.priority}) in queue {work.queue}"


def _reserved_note(nomination: Nomination) -> str:
    return f"; it waited long: {len(nomination.nodes)} nodes are reserved for it"
