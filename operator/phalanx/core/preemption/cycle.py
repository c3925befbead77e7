"""Preemption, reclaim and starvation reservations inside one scheduling cycle.

`run_cycle` places groups in order of decreasing priority. Around each placement it
opens the holds this group may use; when a gang cannot be placed, `Preemptions.failed`
looks for victims (whole gangs, elastic pods first) whose eviction makes it fit, holds
the room it would use, and records the evictions. A gang its queue's capability has no
room for is offered `over_capability` by admission: lower-priority gangs of its queue
that give that room back, then the same search. The gang itself is not bound in that
cycle: its room is still occupied until the victims are gone. Otherwise the first gang of
its queue that waits gets room reserved from its expected start (or, of unknown start,
once it starved), and groups of lower priority use that room only if they end by then
(`reservations.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial

from phalanx.core.admission.admit import OverCapability
from phalanx.core.admission.members import GroupWork
from phalanx.core.admission.queues import QueueLedger, Shortfall
from phalanx.core.model.clock import clock_time
from phalanx.core.model.config import SchedulerConfig
from phalanx.core.model.eviction import Eviction, EvictionReason
from phalanx.core.model.inputs import PodInfo
from phalanx.core.model.names import GPU, GroupKey
from phalanx.core.model.nomination import PREEMPTING, RESERVED, Nomination
from phalanx.core.model.status import Problem, Reason, StatusCode
from phalanx.core.placement.gang import GangRequest
from phalanx.core.placement.routes import Route
from phalanx.core.placement.state import CycleState
from phalanx.core.preemption.find import Finder, Found, never_fits
from phalanx.core.preemption.holds import Holds
from phalanx.core.preemption.reservations import Failure, Reservations, class_of
from phalanx.core.preemption.rules import Claim, claim_for
from phalanx.core.preemption.search import cost_of
from phalanx.core.preemption.units import Unit, within_spare
from phalanx.core.preemption.why import PREEMPTION_OFF, capability_note, why_not
from phalanx.core.snapshot.resources import charged, total_of
from phalanx.core.timeline.estimate import Occupant
from phalanx.core.timeline.limits import limit_of
from phalanx.topology.tree import ROOT_LEVEL


class Preemptions(Reservations):
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
        self._occupants: list[Occupant] | None = None
        self._closed_for: GroupKey | None = None  # see `_without_backfill`
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

    def before(self, work: GroupWork, backfill: bool = True) -> None:
        """Open the holds the group may use; without `backfill`, not the reservations
        it may enter by backfill alone (`backfill_next`)."""
        self.holds.open_for(self._opener(work), backfill)

    def backfill_next(self, work: GroupWork) -> bool:
        """Open the reservations the group may enter by backfill too, if there are any
        (True: then worth placing again). A gang is placed outside reserved room when it
        fits there: bin packing favours the nodes a reservation's room is freeing (they
        are part full), so a gang that could run elsewhere took them, and the reserved
        gang, though never started later than its reservation, started later than the
        room alone would have allowed."""
        opener = self._opener(work)
        if not self.holds.backfills(opener):
            return False
        self.holds.open_for(opener)
        return True

    def after(
        self, work: GroupWork, placed: bool, bound: Sequence[tuple[PodInfo, int]] = ()
    ) -> None:
        """The group's hold goes once it is placed (`bound`: its pods placed this cycle,
        which leave at its limit); the holds opened for it stay open until the next
        group's `before` (`Holds.open_for`) or `close`."""
        if placed:
            self.holds.drop(work.key)
            self.nominations.pop(work.key, None)
            self.placed(work, bound)

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
            self.state.index, ledger, work.key, work.queue, work.priority, class_of(work),
            self.now,
        )
        found = None
        if self.config.preemption:
            found = self._preempt(failure, claim)
        costly = ""
        if found is not None and found.units and not claim.reclaim:
            costly = self._costs_more(failure, found)
            if costly:
                found = None
        if found is not None and (found.units or work.key in self.nominations):
            return self._nominate(failure, found, claim, ledger)
        problem = failure.problem  # worked out only now: evictions made no room
        if problem.code is not StatusCode.UNSCHEDULABLE:
            return self._keep_reservation(work, problem)
        explain = self.config.preemption and self.config.explain_preemption
        note = costly or (self._why_not(failure, claim, ledger) if explain else "")
        note += self._kept_out(work)
        problem = Problem(problem.code, problem.reason, problem.message + note)
        return self._reserve(failure, problem)

    def _costs_more(self, failure: Failure, found: Found) -> str:
        """Why evicting `found.units` costs more than it saves ("" if it does not): the
        work they lose (GPU-seconds since their checkpoints, else their starts) is more
        than the GPU-seconds the gang would wait until its expected start from runtime
        limits, over `preemption_loss_factor` (limits overstate runtimes, so the wait
        they give is longer than the real one). Only where the start is known and the
        gang asks for GPUs; reclaim below a guarantee is never held back (not asked)."""
        factor = self.config.preemption_loss_factor
        gpus = _gpus(failure.request)
        if factor <= 0 or gpus <= 0:
            return ""
        lost = sum(unit.lost for unit in found.units)
        start = self._start_of(failure)
        if start.at is None or lost * factor <= gpus * (start.at - self.now):
            return ""
        waited = gpus * (start.at - self.now) / 3600
        return (
            f"; it waits rather than evict {_victims(found.units)}: they would lose "
            f"{lost / 3600:.1f} GPU-h of work, more than 1/{factor:g} of the {waited:.1f} "
            f"GPU-h its {gpus:g} GPUs wait until its expected start at "
            f"{clock_time(start.at)} UTC from runtime limits (preemption loss factor)"
        )

    def _kept_out(self, work: GroupWork) -> str:
        """Why room reserved for another gang is not the gang's: "; 1 node is reserved
        for NS/big from 14:20 UTC, and its runtime limit (3600s) ends after that". The
        rule is `Opener.may_use`'s, the one placing follows."""
        opener = self._opener(work)
        for holder, hold in sorted(self.holds.by_group.items()):
            if hold.nomination.reason != RESERVED or opener.may_use(holder, hold):
                continue
            limit = limit_of(work.group, self.state.index.queues)
            if not (opener.backfill or opener.reserved):
                why = "backfill is off"
            elif limit is None:
                why = "it has no runtime limit"
            else:
                why = f"its runtime limit ({limit}s) ends after that"
            count, start = len(hold.nodes), hold.nomination.start
            nodes = "1 node is" if count == 1 else f"{count} nodes are"
            when = f" from {clock_time(start)} UTC" if start is not None else ""
            return f"; {nodes} reserved for {holder}{when}, and {why}"
        return ""

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
            self.state.index, ledger, work.key, work.queue, work.priority, class_of(work),
            self.now,
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
        costly = self._costs_more(failure, found)
        if costly:
            return costly
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

    def _not_evicting(self, failure: Failure) -> Problem:
        """A gang tied to its running pods' nodes, or that no room could hold, keeps its
        reservation, if any; one whose hold expired is released for one cycle: others
        may take the room."""
        work, problem = failure.work, failure.problem
        expired = not failure.request.anchors and self._expired(work)
        if not expired or problem.code is not StatusCode.UNSCHEDULABLE:
            return self._keep_reservation(work, problem)
        return Problem(problem.code, problem.reason, problem.message + _EXPIRED)

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
            partial(cost_of, own=own, weigh=self.config.weigh_work_lost),
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
            message = _eviction_message(work, reason) + work_lost_note(unit)
            reason = reason or EvictionReason.PREEMPTED
            self.evictions.extend(
                Eviction(pod.key, unit.group, reason, work.key, message, unit.lost)
                for pod in unit.pods
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



def work_lost_note(unit: Unit) -> str:
    """"; it loses 2.1 GPU-h of work, since its checkpoint at 13:02" (times in UTC)."""
    if unit.lost <= 0.0 and not unit.checkpointed:
        return "; it loses no work: it had not started"
    when = clock_time(unit.saved)
    since = f"its checkpoint at {when}" if unit.checkpointed else f"it started at {when}"
    return f"; it loses {unit.lost / 3600:.1f} GPU-h of work, done since {since} UTC"


def _gpus(request: GangRequest) -> float:
    """The gang's GPUs (a fractional pod counting its part)."""
    milli = sum((dict(shape.requests).get(GPU, 0) + shape.gpu_milli) * count
                for shape, count in request.demand)  # fmt: skip
    return milli / 1000


def _victims(units: Sequence[Unit]) -> str:
    pods = sum(len(u.pods) for u in units)
    groups = sorted({u.group or u.key for u in units})
    top = max(u.priority for u in units)
    named = ", ".join(groups[:5]) + (f" and {len(groups) - 5} more" if len(groups) > 5 else "")
    noun = "group" if len(groups) == 1 else "groups"
    pod_word = "pod" if pods == 1 else "pods"
    return f"{pods} {pod_word} of {len(groups)} {noun} ({named}; priority <= {top})"


def _eviction_message(work: GroupWork, reason: EvictionReason | None) -> str:
    if reason is EvictionReason.RECLAIMED:
        return f"reclaimed for {work.key} by queue {work.queue}, which is below its guarantee"
    return f"preempted by {work.key} (priority {work.priority}) in queue {work.queue}"
