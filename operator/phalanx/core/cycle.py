"""One scheduling cycle: admit and place gangs in turn, then elastic extras; explain the rest.

Pure: the same snapshot and config always give the same result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from phalanx.core.admission.admit import OverCapability, admit, seed_ledger
from phalanx.core.admission.members import GroupWork, Problem, Settled, build_works
from phalanx.core.admission.partial import release_partial
from phalanx.core.admission.queues import QueueLedger
from phalanx.core.explain.unplaced import explain
from phalanx.core.model.backoff import is_held, next_backoff
from phalanx.core.model.clock import clock_time
from phalanx.core.model.config import SchedulerConfig
from phalanx.core.model.eviction import Eviction
from phalanx.core.model.inputs import PodInfo, QueueInfo
from phalanx.core.model.names import GroupKey, NodeName
from phalanx.core.model.nomination import RESERVED, Nomination
from phalanx.core.model.result import (
    Binding,
    CycleResult,
    ExpectedStart,
    GroupDecision,
    Placement,
)
from phalanx.core.model.status import Reason, StatusCode
from phalanx.core.placement.claims import allocate_placed
from phalanx.core.placement.gang import GangPlacement, GangRequest, place_gang
from phalanx.core.placement.near_not_ready import avoiding
from phalanx.core.placement.routes import Route, route_of
from phalanx.core.placement.state import CycleState
from phalanx.core.preemption.cycle import Preemptions
from phalanx.core.preemption.reservations import Failure
from phalanx.core.snapshot.claims import claims_in_words
from phalanx.core.snapshot.picture import Snapshot
from phalanx.core.snapshot.resources import charged
from phalanx.core.snapshot.shapes import Shape, demand_of
from phalanx.core.timeline.estimate import Waiting, expected_starts
from phalanx.core.timeline.limits import limit_of, over_maximum, past_limit
from phalanx.topology.tree import ROOT_LEVEL


@dataclass(slots=True)
class _Outcome:
    """What happened to one group during the cycle."""

    admitted: bool = False
    problem: Problem | None = None
    bound: list[tuple[PodInfo, int]] = field(default_factory=list)
    gang: GangPlacement | None = None
    route: Route | None = None
    extras_waiting: int = 0
    note: str = ""  # rejected at its queue's capability: why eviction does not help


def run_cycle(
    snapshot: Snapshot,
    config: SchedulerConfig | None = None,
    now: float = 0.0,
    *,
    estimate: bool = False,
) -> CycleResult:
    """`estimate`: also work out when each waiting gang is expected to start
    (`CycleResult.expected_starts`); the shell asks for it only as often as users need
    it, since it places every waiting gang again."""
    config = config or SchedulerConfig()
    index = snapshot.index
    state = CycleState(index, config.avoid_not_ready_level)
    works = [_limit_refused(work, index.queues) for work in build_works(index)]
    held = {key for key, backoff in snapshot.backoffs.items() if is_held(backoff, now)}
    backing_off = {work.key for work in works if work.key in held and work.problem is None}
    works = [_hold(work, snapshot, now) if work.key in backing_off else work for work in works]
    ledger = seed_ledger(index, works, now, config.usage_half_life_seconds)
    outcomes: dict[GroupKey, _Outcome] = {}  # the groups tried; `_outcome` reads them
    preemptions = Preemptions(state, works, config, now)

    def place(work: GroupWork) -> bool:
        """Place the gang of a group just admitted; False when it could not be and no
        room is being freed for it (its queue reservation is then given back)."""
        outcome = outcomes[work.key] = _Outcome(admitted=True)
        route = route_of(index, work, config)
        if isinstance(route, Problem):
            outcome.problem = route
            return False
        outcome.route = route
        if config.avoid_not_ready_level and not work.running and route.topology is not None:
            work.shapes = avoiding(work.shapes, route.topology)  # a new gang
        if work.mandatory:
            preemptions.before(work, backfill=False)
            request, why = _place_mandatory(state, work, route, config, outcome)
            if why is not None and preemptions.backfill_next(work):
                request, why = _place_mandatory(state, work, route, config, outcome)
            if why is not None:
                outcome.problem = preemptions.failed(Failure(work, request, route, why), ledger)
            preemptions.after(work, outcome.problem is None, outcome.bound)
        return outcome.problem is None or preemptions.holds_room(work.key)

    def over(work: GroupWork, missing: OverCapability) -> bool:
        """A gang its queue has no room for under `capability`: evict lower-priority
        gangs of its queue that free that room and, with them gone, room to place it;
        else note why that does not help."""
        outcome = outcomes.setdefault(work.key, _Outcome())
        route = route_of(index, work, config)
        if isinstance(route, Problem):
            return False
        shapes = work.shapes[: work.mandatory]
        request = _request(work.gang, shapes, route, config, _anchors(state, work, outcome))
        preemptions.before(work)
        problem = preemptions.over_capability(work, request, route, missing, ledger)
        preemptions.after(work, False)
        if isinstance(problem, str):
            outcome.note = problem
            return False
        outcome.admitted, outcome.route, outcome.problem = True, route, problem
        return True

    admission = admit(index, works, ledger, place, over)
    preemptions.close()
    for key, problem in admission.rejected.items():
        outcome = outcomes.setdefault(key, _Outcome())
        outcome.problem = _noted(problem, outcome.note)
    for work in admission.admitted:
        outcome = _outcome(outcomes, work.key)
        if outcome.route is not None and outcome.problem is None:
            _place_extras(state, ledger, work, outcome.route, config, outcome)
    bindings: list[Binding] = []
    for work in admission.admitted:
        for pod, node in _outcome(outcomes, work.key).bound:
            devices = state.shares.get(pod.key, ())
            bindings.append(Binding(pod.key, NodeName(index.nodes[node].name), work.key, devices))
    nominations, settled = preemptions.nominations, index.settled
    decisions = tuple(
        _timed(
            _settled_decision(state, work, config, settled.get(work.key))
            or _decide(state, work, _outcome(outcomes, work.key), config, nominations.get(
                work.key)),
            work,
            backing_off,
            snapshot,
            now,
            config,
        )
        for work in works
    )
    if not snapshot.dra.empty:
        bindings, decisions = _with_claims(snapshot, bindings, decisions)
        decisions = _worded(snapshot, decisions)
    evictions = _with_limits(preemptions.evictions, past_limit(works, index.queues, now))
    decisions, releases = release_partial(snapshot, decisions, now, config)
    expected = (
        _expected(state, works, outcomes, decisions, preemptions, config, now) if estimate else ()
    )
    return CycleResult(
        tuple(bindings), decisions, tuple(index.invalid), now, evictions, releases, expected
    )


def _with_claims(
    snapshot: Snapshot, bindings: list[Binding], decisions: tuple[GroupDecision, ...]
) -> tuple[list[Binding], tuple[GroupDecision, ...]]:
    """The bindings with their DRA claims' devices; a gang whose claims cannot all be
    allocated on its nodes loses this cycle's bindings and waits, saying why."""
    placed = allocate_placed(snapshot.dra, snapshot.nodes, bindings)
    if not placed.refused:
        return placed.bindings, decisions
    dropped: dict[GroupKey, int] = {}
    for binding in bindings:
        if binding.group in placed.refused:
            dropped[binding.group] = dropped.get(binding.group, 0) + 1
    return placed.bindings, tuple(
        _claims_refused(d, placed.refused[d.group], dropped[d.group])
        if d.group in placed.refused
        else d
        for d in decisions
    )


def _worded(
    snapshot: Snapshot, decisions: tuple[GroupDecision, ...]
) -> tuple[GroupDecision, ...]:
    """Wait messages of gangs with DRA claims: each column named by the devices it
    counts, and what the gang's claims ask for, named (the first pod's, as its pods'
    claims come from one template)."""
    first: dict[str, str] = {}
    for pod in snapshot.pods:
        if pod.group and pod.node_name is None and pod.key in snapshot.dra.pod_claims:
            first.setdefault(f"{pod.namespace}/{pod.group}", str(pod.key))
    return tuple(_in_words(d, snapshot, first.get(d.group)) for d in decisions)


def _in_words(decision: GroupDecision, snapshot: Snapshot, pod: str | None) -> GroupDecision:
    message = decision.message
    for column, words in snapshot.dra.columns.items():
        message = message.replace(column, words)
    if pod is not None and not decision.scheduled and "claim " not in message:
        message = f"{message} ({claims_in_words(snapshot.dra, pod)})"
    return decision if message == decision.message else replace(decision, message=message)


def _claims_refused(decision: GroupDecision, why: str, dropped: int) -> GroupDecision:
    placed = decision.placed - dropped
    return replace(
        decision,
        scheduled=placed >= decision.min_member,
        placed=placed,
        code=StatusCode.UNSCHEDULABLE,
        reason=Reason.INSUFFICIENT_RESOURCES,
        message=why,
        placement=None,
    )


def _limit_refused(work: GroupWork, queues: Mapping[str, QueueInfo]) -> GroupWork:
    """A gang to place asking more than its queue's maximum runtime limit is refused."""
    if work.problem is not None or not work.mandatory:
        return work
    problem = over_maximum(work.group, queues)
    return work if problem is None else replace(work, problem=problem)


def _with_limits(evictions: Sequence[Eviction], limits: Sequence[Eviction]) -> tuple[Eviction, ...]:
    """The cycle's evictions: victims, then gangs past their limit (a pod once)."""
    if not limits:
        return tuple(evictions)
    taken = {e.pod for e in evictions}
    return (*evictions, *(e for e in limits if e.pod not in taken))


def _expected(
    state: CycleState,
    works: Sequence[GroupWork],
    outcomes: dict[GroupKey, _Outcome],
    decisions: Sequence[GroupDecision],
    preemptions: Preemptions,
    config: SchedulerConfig,
    now: float,
) -> tuple[ExpectedStart, ...]:
    """When each gang that waits with a route (admitted, or held back by its queue's
    capability: `_Outcome.route`) is expected to start, in the order groups are placed
    (priority, then age); the rest wait on something no end of work changes, said so."""
    decided = {d.group: d for d in decisions}
    waiting: list[Waiting] = []
    unknown: list[ExpectedStart] = []
    order = sorted(works, key=lambda w: (-w.priority, w.creation, w.key))
    for work in order:
        decision = decided.get(work.key)
        if decision is None or decision.scheduled or not work.mandatory:
            continue
        outcome = _outcome(outcomes, work.key)
        if outcome.route is None or decision.code is StatusCode.UNRESOLVABLE:
            message = f"start unknown: {decision.message}"[: config.max_message_length]
            unknown.append(ExpectedStart(work.key, None, (), message))
            continue
        shapes = work.shapes[: work.mandatory]
        request = _request(work.gang, shapes, outcome.route, config, ())
        waiting.append(Waiting(work.key, request, limit_of(work.group, state.index.queues)))
    occupants = preemptions.occupants_now()
    holds = {key: hold.nodes for key, hold in preemptions.holds.by_group.items()}
    found = expected_starts(state, waiting, occupants, now, config.estimate_depth, holds)
    return (*(_no_later_than_reserved(e, decided[e.group]) for e in found), *unknown)


def _no_later_than_reserved(expected: ExpectedStart, decision: GroupDecision) -> ExpectedStart:
    """A gang holding a reservation starts by the reservation's start, whatever else
    the plan says (that room is kept for it from then)."""
    held = decision.nomination
    if held is None or held.reason != RESERVED or held.start is None:
        return expected
    if expected.at is not None and expected.at <= held.start:
        return expected
    when = clock_time(held.start)
    message = f"expected to start by {when} UTC, on the {len(held.nodes)} nodes reserved for it"
    return ExpectedStart(expected.group, held.start, expected.waits_for, message)


def _noted(problem: Problem, note: str) -> Problem:
    return replace(problem, message=f"{problem.message}; {note}") if note else problem


_UNTRIED = _Outcome()
"""The outcome of every group the cycle did not try (never changed): one object per
group, for 10,000 running groups each cycle, was a twentieth of a simulator cycle."""


def _outcome(outcomes: dict[GroupKey, _Outcome], key: GroupKey) -> _Outcome:
    return outcomes.get(key, _UNTRIED)


def _hold(work: GroupWork, snapshot: Snapshot, now: float) -> GroupWork:
    """A group waiting out its timeout backoff is not tried this cycle (its pods on
    nodes still count against its queue)."""
    until = snapshot.backoffs[work.key].until
    message = f"not placed within scheduleTimeoutSeconds; next try in {until - now:.0f}s"
    return replace(
        work, mandatory=0, problem=Problem(StatusCode.UNSCHEDULABLE, Reason.TIMEOUT, message)
    )


def _timed(
    decision: GroupDecision,
    work: GroupWork,
    backing_off: set[GroupKey],
    snapshot: Snapshot,
    now: float,
    config: SchedulerConfig,
) -> GroupDecision:
    """The decision with the group's timeout backoff: kept while held, renewed (doubled)
    when a try ran past the timeout again, dropped once scheduled (most groups: they
    return at once)."""
    if work.key in backing_off:
        return replace(decision, backoff=snapshot.backoffs.get(work.key), held=True)
    if decision.scheduled:
        return decision
    previous = snapshot.backoffs.get(work.key)
    backoff = next_backoff(work.group, decision.scheduled, previous, now, config)
    if backoff is None:
        return decision
    message = f"not placed within scheduleTimeoutSeconds: {decision.message}"
    return replace(
        decision,
        code=StatusCode.UNSCHEDULABLE,
        reason=Reason.TIMEOUT,
        message=message[: config.max_message_length],
        backoff=backoff,
    )


def _request(
    pods: tuple[PodInfo, ...],
    shapes: tuple[Shape, ...],
    route: Route,
    config: SchedulerConfig,
    anchors: tuple[int, ...],
) -> GangRequest:
    return GangRequest(
        pods=pods,
        shapes=shapes,
        demand=demand_of(shapes),
        topology=route.topology,
        limit=route.limit,
        preferred=route.preferred,
        sub_group=route.sub_group,
        anchors=anchors,
        spread=config.node_order == "spread",
        fragmentation=config.fragmentation_aware,
    )


def _anchors(state: CycleState, work: GroupWork, outcome: _Outcome) -> tuple[int, ...]:
    """The nodes of the group's pods, running or bound this cycle (none for most waiting
    gangs, asked again for each of the 2,000 that wait in a late Alibaba cycle)."""
    if not work.running and not outcome.bound:
        return ()
    position = state.index.node_position
    nodes = {position[p.node_name] for p in work.running if p.node_name in position}
    nodes.update(node for _, node in outcome.bound)
    return tuple(sorted(nodes))


def _place_mandatory(
    state: CycleState,
    work: GroupWork,
    route: Route,
    config: SchedulerConfig,
    outcome: _Outcome,
) -> tuple[GangRequest, Explanation | None]:
    """Place the gang. Returns the request and, when it could not be placed, how to
    say why (`Explanation`: worked out only if evictions do not make room)."""
    shapes = work.shapes[: work.mandatory]
    request = _request(work.gang, shapes, route, config, _anchors(state, work, outcome))
    key = _rejection_key(request)
    known = state.rejections.get(key) if key is not None else None
    if known is not None and known[0] == state.generation:
        return request, Explanation(state, request, None, known[1])
    placed = place_gang(state, request)
    if placed is None:
        return request, Explanation(state, request, key)
    outcome.gang = placed
    outcome.bound.extend(placed.assignments)
    return request, None


class Explanation:
    """Why a gang was not placed, worked out on first use: the message counts every
    node (`explain`), and a gang given room by evictions reports those instead. The
    state must be as it was when placement failed (the victim search restores it)."""

    def __init__(
        self,
        state: CycleState,
        request: GangRequest,
        key: object | None,
        problem: Problem | None = None,
    ) -> None:
        self._state, self._request, self._key = state, request, key
        self._generation = state.generation
        self._problem = problem

    def __call__(self) -> Problem:
        if self._problem is None:
            self._problem = explain(self._state, self._request)
            if self._key is not None:
                self._state.rejections[self._key] = (self._generation, self._problem)
        return self._problem


def _rejection_key(request: GangRequest) -> object | None:
    """Gangs asking the same of the same cluster state fail the same way; groups with
    pods already on nodes are tied to those nodes and are not shared."""
    if request.anchors:
        return None
    return (
        request.demand,
        request.topology,
        request.limit,
        request.preferred,
        request.sub_group,
        request.spread,
    )


def _place_extras(
    state: CycleState,
    ledger: QueueLedger,
    work: GroupWork,
    route: Route,
    config: SchedulerConfig,
    outcome: _Outcome,
) -> None:
    """Elastic pods beyond the gang, one at a time, near the group's other pods."""
    for pod, shape in zip(work.extras, work.shapes[work.mandatory :], strict=True):
        if ledger.shortfall(work.queue, charged(pod)) is not None:
            outcome.extras_waiting += 1
            continue
        anchors = _anchors(state, work, outcome)
        request = _request((pod,), (shape,), route, config, anchors)
        placed = place_gang(state, request)
        if placed is None:
            outcome.extras_waiting += 1
            continue
        ledger.add(work.queue, charged(pod))
        outcome.bound.extend(placed.assignments)
        if outcome.gang is None:
            outcome.gang = placed


def _decide(
    state: CycleState,
    work: GroupWork,
    outcome: _Outcome,
    config: SchedulerConfig,
    nomination: Nomination | None,
) -> GroupDecision:
    placed = len(work.running) + len(outcome.bound)
    problem = work.problem or outcome.problem
    scheduled = problem is None and placed >= work.min_member
    if scheduled:
        code, reason = StatusCode.SUCCESS, Reason.SCHEDULED
        message = _scheduled_message(state, work, outcome, placed)
    elif problem is not None:
        code, reason, message = problem.code, problem.reason, problem.message
    else:
        code, reason = StatusCode.UNSCHEDULABLE, Reason.GANG_INCOMPLETE
        message = f"{placed} of {work.min_member} pods on nodes"
    # by position, in field order (by keyword: a thirtieth of a late Alibaba simulator cycle)
    return GroupDecision(
        work.key,
        outcome.admitted or len(work.running) >= work.min_member,  # admitted
        scheduled,
        placed,
        code,
        reason,
        message[: config.max_message_length],
        _placement(state, work, outcome) if outcome.bound else None,
        work.queue,
        work.min_member,
        work.priority,
        work.counts,
        work.single,  # implicit
        None if scheduled else nomination,
        _on_nodes(work) + len(outcome.bound),
    )


def _settled_decision(
    state: CycleState, work: GroupWork, config: SchedulerConfig, kept: object
) -> GroupDecision | None:
    """The decision of a group running with nothing to place (`Settled`, which build_works
    made or took over from the last cycle, for this very work): the last cycle's under
    the same config, else made now and kept. No cycle tries such a group (admission takes
    groups with pods to place), and it is scheduled, so no hold is reported: the decision
    depends on the work and the config alone. None for any other group."""
    if not isinstance(kept, Settled) or kept.work is not work:
        return None
    if kept.decision is None or kept.config is not config:
        kept.decision = _decide(state, work, _UNTRIED, config, None)
        kept.config = config
    return kept.decision


def _on_nodes(work: GroupWork) -> int:
    """A plain loop: a generator per group, for 10,000 groups, cost more than the count;
    none when every pod of the group runs (each is on its node), as most do."""
    pods = work.pods
    if pods is not None and len(pods.pods) == len(pods.running):
        return len(pods.running)
    count = 0
    for pod in pods.pods if pods is not None else work.running:
        if pod.node_name:
            count += 1
    return count


def _scheduled_message(state: CycleState, work: GroupWork, outcome: _Outcome, placed: int) -> str:
    message = f"{_pods(placed)} on nodes (minMember {work.min_member})"
    if outcome.bound:
        where = ""
        gang, route = outcome.gang, outcome.route
        if gang is not None and route is not None and gang.level != ROOT_LEVEL:
            tree = state.tree(route.topology)
            where = f" in {tree.levels[gang.level]} {tree.name(gang.domain)}"
        message = f"placed {_pods(len(outcome.bound))}{where}; {message}"
    if outcome.extras_waiting:
        message += f"; {_pods(outcome.extras_waiting)} more wait for room"
    return message


def _pods(count: int) -> str:
    return f"{count} pod" if count == 1 else f"{count} pods"


def _placement(state: CycleState, work: GroupWork, outcome: _Outcome) -> Placement:
    gang = outcome.gang
    route = outcome.route
    topology = route.topology if route is not None else None
    tree = state.tree(topology)
    anchors = _anchors(state, work, outcome)
    nodes = tuple(NodeName(state.index.nodes[i].name) for i in anchors)
    if gang is None or not tree.levels:
        return Placement(topology, None, 0, (), nodes)
    if gang.level != ROOT_LEVEL:
        domain = ((tree.levels[gang.level], tree.name(gang.domain)),)
        return Placement(topology, tree.levels[gang.level], gang.climbed, domain, nodes)
    tops = sorted({tree.node_ancestors[i][1] for i in anchors})
    domains = tuple((tree.levels[0], tree.name(d)) for d in tops)
    return Placement(topology, None, gang.climbed, domains, nodes)
