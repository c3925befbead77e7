"""When a waiting gang can start, played forward from the runtime limits of what runs.

Every running gang with a limit leaves at its start plus its limit (`Occupant.end`);
pods already terminating leave now; work with no limit never leaves. A gang can start
once enough of the occupants, taken in the order they end, are gone for `place_gang`
itself to place it, with every rule of a placement (topology, holds, shapes). Taking
more occupants away only frees room, so the fewest that suffice is found by bisection:
a dozen placements for a thousand running gangs. Its start is the end of the last of
them; the gangs it waits for are those of them on the nodes it would use. A gang that
needs work with no limit gone has no estimate (`Start.at` None): unknown, never made up.

`expected_starts` estimates the waiting gangs in turn, each planned onto its room from
its start as an occupant in its own right (until its own limit ends, or for ever), so
a later gang never counts on room an earlier one is expected to take: Slurm's
conservative backfill plan, and its `squeue --start`.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from phalanx.core.model.clock import clock_time
from phalanx.core.model.inputs import PodInfo
from phalanx.core.model.names import GroupKey
from phalanx.core.model.result import ExpectedStart
from phalanx.core.placement.gang import GangPlacement, GangRequest, place_gang
from phalanx.core.placement.state import CycleState
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.timeline.limits import limit_of, started
from phalanx.core.timeline.profile import FOREVER, RoomProfile
from phalanx.topology.tree import ROOT_LEVEL


@dataclass(frozen=True, slots=True)
class Occupant:
    """Pods (with their node indices) that leave together at `end`; `held`: nodes whose
    hold (one each) goes with them (another gang's reservation, planned to end then)."""

    group: GroupKey | None
    pods: tuple[tuple[PodInfo, int], ...]
    end: float
    held: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Start:
    """`at` None: it needs work with no limit gone. `placement`: where it would go."""

    at: float | None
    placement: GangPlacement | None
    waits_for: tuple[GroupKey, ...]


@dataclass(frozen=True, slots=True)
class Waiting:
    """A gang to estimate: its request, and its own limit (None: none)."""

    key: GroupKey
    request: GangRequest
    limit: int | None


def earliest_start(
    state: CycleState, request: GangRequest, occupants: Sequence[Occupant], now: float
) -> Start:
    """`occupants` sorted by end. The state is left as it was."""
    away = _Away(state, occupants)
    try:
        low, high, placed = _gallop(away, request, len(occupants))
        if placed is None:
            return Start(None, None, ())
        while low < high:  # the gang fits with the first `high` gone, not with `low - 1`
            middle = (low + high) // 2
            found = away.fits(request, middle)
            if found is None:
                low = middle + 1
            else:
                high, placed = middle, found
    finally:
        away.to(0)
    at = max(now, occupants[high - 1].end) if high else now
    nodes = {node for _, node in placed.assignments}
    waits_for = sorted({o.group for o in occupants[:high]
                        if o.group is not None and any(n in nodes for _, n in o.pods)})
    return Start(at, placed, tuple(waits_for))


def _gallop(
    away: _Away, request: GangRequest, count: int
) -> tuple[int, int, GangPlacement | None]:
    """The bounds to bisect: the gang fits with the first `high` occupants gone (with the
    placement there) and not with `low - 1`; found by doubling from none, so a gang that
    the first few ends let in moves a few occupants, not all of them (`placed` None: it
    fits with none of them left)."""
    tried, gone = 0, 0
    while True:
        placed = away.fits(request, gone)
        if placed is not None:
            return (tried + 1 if gone else 0), gone, placed
        if gone == count:
            return count, count, None
        tried, gone = gone, min(count, max(1, gone * 2))


class _Away:
    """The state with the first `gone` occupants taken away, moved from one count to
    the next by the difference alone: a bisection then moves about twice the occupants
    in all, where taking each count's away afresh moved them a dozen times."""

    def __init__(self, state: CycleState, occupants: Sequence[Occupant]) -> None:
        self.state, self.occupants, self.gone = state, occupants, 0

    def to(self, gone: int) -> None:
        """Taken away in order, put back in the reverse order: each pod then comes back to
        the very state it left, so the GPU devices it takes are free (a pod bound this
        cycle takes its devices afresh, and put back first it took a device a running pod
        taken away later held, which that pod took again when it came back: two pods on
        one device, in the simulator)."""
        state = self.state
        for occupant in self.occupants[self.gone : gone]:
            for pod, node in occupant.pods:
                state.unplace(node, pod)
            for node in occupant.held:
                state.hold(node, -1)
        for occupant in reversed(self.occupants[gone : self.gone]):
            for node in occupant.held:
                state.hold(node)
            for pod, node in reversed(occupant.pods):
                state.place(node, pod)
        self.gone = gone

    def fits(self, request: GangRequest, gone: int) -> GangPlacement | None:
        """Where the gang goes with the first `gone` occupants away (nothing kept)."""
        self.to(gone)
        placed = place_gang(self.state, request)
        if placed is not None:
            for pod, node in placed.assignments:
                self.state.unplace(node, pod)
        return placed


def expected_starts(
    state: CycleState,
    waiting: Sequence[Waiting],
    occupants: Sequence[Occupant],
    now: float,
    depth: int,
    holds: Mapping[GroupKey, Sequence[int]],
) -> list[ExpectedStart]:
    """One estimate per waiting gang, in the order given (the order they are placed in);
    past the first `depth`, none (said so). `holds`: the nodes held for each group (every
    hold is on; a gang's own is lifted while it is estimated). The state is left as it
    was.

    Most gangs are answered by the room over time (`RoomProfile`); a gang it cannot
    answer is placed the old way (`earliest_start`) on the state with every gang
    planned before it put in. A gang's holds stay on for the gangs before it and go
    once it is planned: from then its planned pods hold what it needs."""
    plan = sorted(occupants, key=_END)
    profile = RoomProfile(state, [(o.group, o.pods, o.end) for o in plan], now)
    profile.prepare([gang.request for gang in waiting[:depth]])
    planned: list[tuple[PodInfo, int]] = []  # put in the state, to be taken out
    pending: list[tuple[GroupKey, GangPlacement, float]] = []  # planned, not in the state
    found: list[ExpectedStart] = []
    lifted: list[int] = []  # holds of gangs planned (their room is theirs in the plan)
    try:
        for position, gang in enumerate(waiting):
            if position >= depth:
                message = f"not estimated: behind the first {depth} waiting gangs"
                found.append(ExpectedStart(gang.key, None, (), message))
                continue
            own = holds.get(gang.key, ())
            if profile.answers(gang.request):
                start = _from_profile(profile, gang.request, own)
            else:
                planned.extend(_put_in(state, pending, plan))
                pending = []
                start = _placed_the_old_way(state, gang.request, plan, now, own)
            found.append(_expected(state, gang, start, now))
            if start.placement is None or start.at is None:
                continue
            end = start.at + gang.limit if gang.limit is not None else FOREVER
            profile.commit(gang.key, start.placement.assignments, end)
            pending.append((gang.key, start.placement, end))
            profile.lift(own, 1)  # planned, it needs its reservation no more
            for node in own:
                state.hold(node, -1)
            lifted.extend(own)
    finally:
        for pod, node in reversed(planned):
            state.unplace(node, pod)
        for node in lifted:
            state.hold(node)
    return found


def _from_profile(profile: RoomProfile, request: GangRequest, own: Sequence[int]) -> Start:
    """The gang's start from the room over time, its own holds lifted."""
    profile.lift(own, 1)
    try:
        at, placement = profile.earliest(request)
    finally:
        profile.lift(own, -1)
    if at is None or placement is None:
        return Start(None, None, ())
    nodes = [node for _, node in placement.assignments]
    return Start(at, placement, profile.waits_for(nodes, at))


def _put_in(
    state: CycleState,
    pending: Sequence[tuple[GroupKey, GangPlacement, float]],
    plan: list[Occupant],
) -> list[tuple[PodInfo, int]]:
    """The gangs planned so far put in the state (each an occupant of the plan until its
    end), for a gang placed the old way: only then, as that is rare and putting pods in
    is not."""
    put: list[tuple[PodInfo, int]] = []
    for key, placement, end in pending:
        pods = placed_pods(state, placement.assignments)
        for pod, node in pods:
            state.place(node, pod)
        put.extend(pods)
        if end != FOREVER:
            bisect.insort(plan, Occupant(key, pods, end), key=_END)
    return put


def _placed_the_old_way(
    state: CycleState,
    request: GangRequest,
    plan: Sequence[Occupant],
    now: float,
    own: Sequence[int],
) -> Start:
    """`earliest_start` with the gang's own holds lifted."""
    for node in own:
        state.hold(node, -1)
    try:
        return earliest_start(state, request, plan, now)
    finally:
        for node in own:
            state.hold(node)


def placed_pods(
    state: CycleState, assignments: Sequence[tuple[PodInfo, int]]
) -> tuple[tuple[PodInfo, int], ...]:
    """The pods as placed on their nodes (`node_name` set): taken away and put back, a
    pod on a node gets the very GPU devices it held (`DeviceRooms._move_devices`), where
    a waiting pod would take any free ones, maybe one another pod taken away holds."""
    nodes = state.index.nodes
    return tuple((replace(pod, node_name=nodes[node].name), node) for pod, node in assignments)


def _END(occupant: Occupant) -> float:
    return occupant.end


def _expected(state: CycleState, gang: Waiting, start: Start, now: float) -> ExpectedStart:
    if start.at is None or start.placement is None:
        message = ("start unknown: it needs room held by work with no runtime limit"
                   if start.placement is None or start.at is None else "")
        return ExpectedStart(gang.key, None, (), message)
    where = _where(state, gang.request, start.placement)
    count = len(start.waits_for)
    if count == 0:
        message = f"expected to start by {clock_time(start.at)} UTC{where}"
    else:
        noun = "gang reaches its limit" if count == 1 else "gangs reach their limits"
        message = f"expected to start by {clock_time(start.at)} UTC, when {count} {noun}{where}"
    return ExpectedStart(gang.key, start.at, start.waits_for, message)


def _where(state: CycleState, request: GangRequest, placement: GangPlacement) -> str:
    if placement.level == ROOT_LEVEL:
        return ""
    tree = state.tree(request.topology)
    return f" in {tree.levels[placement.level]} {tree.name(placement.domain)}"



def running_occupants(index: ClusterIndex, now: float) -> list[Occupant]:
    """The running groups that leave at their runtime limit (from their start), by end;
    their terminating pods left out (they are leaving already: the caller counts them
    as gone now). Groups with no limit never leave, and are not occupants."""
    position, queues = index.node_position, index.queues
    found: list[Occupant] = []
    for key, group, _, running in index.evictable_groups:
        limit = limit_of(group, queues)
        began = started(running)
        if limit is None or began is None:
            continue
        pods = tuple((p, position[p.node_name]) for p in running
                     if not p.terminating and p.node_name in position)  # fmt: skip
        if pods:
            found.append(Occupant(key, pods, max(now, began + limit)))
    found.sort(key=_END)
    return found
