"""Room over time: how many pods of a shape each topology domain can take at each
moment, as running work reaches its runtime limit and planned gangs come and go.

The estimate of every waiting gang asks one question a thousand times a cycle: the
first moment some domain of the level the gang must stay inside can take all its pods.
Placing the gang again at a dozen moments (`earliest_start`) answered it in about a
millisecond a gang at 4,000 nodes, so a thousand waiting gangs took seconds. Here it is
a lookup:

- each node's free resources are a step function of time, rising at the ends of the
  occupants on it (`_NodeSteps`);
- for each pod shape asked about, each domain's room is the sum of its nodes' fit
  counts, a step function too (`_Level`). A planned gang holds its room from now until
  its end, as in `earliest_start`, so room never shrinks as time goes on, and the first
  moment a domain takes P pods is one bisection, kept per domain and P until one of
  the domain's nodes changes;
- the gang is planned onto the tightest domain of the finest level that takes it then,
  onto as few of its nodes as possible, and only those nodes' domains change.

Only what `place_gang` answers alike is answered here (`RoomProfile.answers`): gangs of
one shape, of whole devices, with no sub-groups and no pods already placed. Others are
placed the old way, and their plans are told to the profile (`commit`).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Sequence
from dataclasses import dataclass, field

from phalanx.core.model.inputs import PodInfo
from phalanx.core.model.names import GroupKey
from phalanx.core.model.status import Exclusion
from phalanx.core.placement.gang import GangPlacement, GangRequest
from phalanx.core.placement.state import HELD_PODS, CycleState
from phalanx.core.snapshot.shapes import Shape, fit_count
from phalanx.topology.tree import DomainTree

FOREVER = math.inf
_Changes = dict[tuple[tuple["Shape", str | None], int, int], list[tuple[float, int]]]
"""(shape and topology, level, domain) -> (moment, change of room from then on)."""
_TIES = 64  # domains compared for tightness among those that take a gang first



@dataclass(slots=True)
class _NodeSteps:
    """A node's free resources and pod slots from `times[i]` until `times[i + 1]`."""

    times: list[float]
    free: list[dict[str, int]]
    pods: list[int]

    def split(self, when: float) -> int:
        """A step boundary at `when` (a planned gang's end), if inside and not one yet;
        where it was put (-1: nowhere)."""
        if when == FOREVER or when <= self.times[0]:
            return -1
        at = bisect_right(self.times, when)
        if self.times[at - 1] == when:
            return -1
        self.times.insert(at, when)
        self.free.insert(at, self.free[at - 1])
        self.pods.insert(at, self.pods[at - 1])
        return at


@dataclass(slots=True)
class _Steps:
    """A domain's room for one shape: `counts[i]` pods from `times[i]`, nondecreasing.
    Plain lists: a domain holds a few dozen steps, where numpy's per-call cost was ten
    times the work."""

    times: list[float]
    counts: list[int]

    def first_reaching(self, pods: int) -> float:
        at = bisect_left(self.counts, pods)
        return self.times[at] if at < len(self.times) else FOREVER

    def at(self, when: float) -> int:
        return self.counts[bisect_right(self.times, when) - 1]

    def add(self, times: Sequence[float], deltas: Sequence[int]) -> None:
        """Add `deltas[j]` to the room from `times[j]` on."""
        steps, counts = self.times, self.counts
        for moment, delta in zip(times, deltas, strict=True):
            at = bisect_left(steps, moment)
            if at == len(steps) or steps[at] != moment:
                steps.insert(at, moment)
                counts.insert(at, counts[at - 1])
            counts[at:] = [count + delta for count in counts[at:]]


@dataclass(slots=True)
class _Level:
    """One level's domains (`domains`, the tree's order) and their room over time;
    `first[P]`: per domain, the first moment it takes P pods."""

    domains: tuple[int, ...]
    position: dict[int, int]
    steps: list[_Steps]
    first: dict[int, list[float]] = field(default_factory=dict)

    def firsts(self, pods: int) -> list[float]:
        found = self.first.get(pods)
        if found is None:
            found = self.first[pods] = [s.first_reaching(pods) for s in self.steps]
        return found

    def changed(self, domain: int) -> None:
        at = self.position[domain]
        steps = self.steps[at]
        for pods, firsts in self.first.items():
            firsts[at] = steps.first_reaching(pods)


@dataclass(slots=True)
class _ShapeRooms:
    """Room over time for pods of one shape in one topology: per node the fit count of
    each of its steps (`counts`; nodes with one step: `constant`), per level the
    domains' sums."""

    shape: Shape
    tree: DomainTree
    static: list[Exclusion | None]
    constant: list[int]
    counts: dict[int, list[int]] = field(default_factory=dict)
    levels: dict[int, _Level] = field(default_factory=dict)


class RoomProfile:
    """Built from the state as it is (holds included), before any gang is planned; it
    keeps its own copy of every node's free amounts, so the state may then change."""

    def __init__(self, state: CycleState, occupants: Sequence[tuple[GroupKey | None,
                 Sequence[tuple[PodInfo, int]], float]], now: float) -> None:
        self.state, self.now = state, now
        self.free0 = [dict(free) for free in state.free]
        self.pods0 = list(state.pods_free)
        self.nodes: dict[int, _NodeSteps] = {}
        self.leaving: dict[int, list[tuple[float, GroupKey | None]]] = {}
        self.shapes: dict[tuple[Shape, str | None], _ShapeRooms] = {}
        self.pristine = True
        for group, pods, end in occupants:
            for pod, node in pods:
                self._release(node, pod, max(end, now))
                self.leaving.setdefault(node, []).append((end, group))

    def prepare(self, requests: Sequence[GangRequest]) -> None:
        """Room for the shapes of these gangs, worked out while the state is as the
        profile was made from (its fit counts are then the state's own)."""
        for request in requests:
            if self.answers(request):
                self._rooms(request.demand[0][0], request.topology)
        self.pristine = False

    def answers(self, request: GangRequest) -> bool:
        """Can room counts alone place this gang (as `place_gang` would)?"""
        if len(request.demand) != 1 or request.anchors or request.sub_group is not None:
            return False
        shape = request.demand[0][0]
        return not shape.fractional

    def earliest(self, request: GangRequest) -> tuple[float | None, GangPlacement | None]:
        """The first moment the gang fits, and where (None, None: never)."""
        shape, pods = request.demand[0]
        rooms = self._rooms(shape, request.topology)
        level = self._level(rooms, request.limit)
        firsts = level.firsts(pods)
        if not len(firsts):
            return None, None
        at = min(firsts)
        if at == FOREVER:
            return None, None
        depth, domain = self._tightest(rooms, request.limit, pods, at)
        nodes = self._nodes(rooms, domain, pods, at)
        assignments = tuple(zip(request.pods, nodes, strict=True))
        return at, GangPlacement(assignments, domain, depth, 0)

    def waits_for(self, nodes: Sequence[int], at: float) -> tuple[GroupKey, ...]:
        """The groups on these nodes that leave after now and by `at`."""
        found = {group for node in set(nodes) for end, group in self.leaving.get(node, ())
                 if group is not None and end <= at}  # fmt: skip
        return tuple(sorted(found))

    def commit(self, group: GroupKey, pods: Sequence[tuple[PodInfo, int]], end: float) -> None:
        """A planned gang: its pods hold their nodes from now until `end`."""
        by_node: dict[int, dict[str, int]] = {}
        counts: dict[int, int] = {}
        for pod, node in pods:
            usage = by_node.setdefault(node, {})
            for name, amount in pod.requests.items():
                usage[name] = usage.get(name, 0) + amount
            counts[node] = counts.get(node, 0) + 1
        changed: _Changes = {}
        for node, usage in by_node.items():
            self._take(node, usage, counts[node], end, changed)
            if end != FOREVER:
                insort(self.leaving.setdefault(node, []), (end, group),
                       key=lambda item: item[0])  # fmt: skip
        self._refresh(changed)

    def lift(self, nodes: Sequence[int], sign: int) -> None:
        """Holds on these nodes lifted (sign 1) or put back (-1), as `CycleState.hold`
        with the sign turned: a gang is estimated with its own holds lifted."""
        changed: _Changes = {}
        for node in nodes:
            self._take(node, {}, -sign * HELD_PODS, FOREVER, changed)
        self._refresh(changed)

    def _take(
        self, node: int, usage: dict[str, int], pods: int, end: float, changed: _Changes
    ) -> None:
        """Resources and pod slots taken on the node from now until `end`; what that
        changes in each level's domain of it is added to `changed`."""
        steps = self._steps(node)
        split = steps.split(end)
        cut = bisect_left(steps.times, end)  # the steps that change
        for at in range(cut):
            if usage:
                free = dict(steps.free[at])
                for name, amount in usage.items():
                    free[name] = free.get(name, 0) - amount
                steps.free[at] = free
            steps.pods[at] -= pods
        for key, rooms in self.shapes.items():
            if rooms.static[node] is None:
                self._recount(rooms, key, node, split, cut, pods > 0, changed)

    def _refresh(self, changed: _Changes) -> None:
        """Each changed domain's room gets the changes of all its nodes at once (the
        nodes of a gang share their domains, and mostly their moments)."""
        for (key, depth, domain), events in changed.items():
            level = self.shapes[key].levels[depth]
            merged: dict[float, int] = {}
            for moment, delta in events:
                merged[moment] = merged.get(moment, 0) + delta
            moments = sorted(m for m, d in merged.items() if d)
            level.steps[level.position[domain]].add(moments, [merged[m] for m in moments])
            level.changed(domain)

    def _release(self, node: int, pod: PodInfo, end: float) -> None:
        steps = self._steps(node)
        steps.split(end)
        start = bisect_right(steps.times, end) - 1
        for at in range(start, len(steps.times)):
            free = dict(steps.free[at])
            for name, amount in pod.requests.items():
                free[name] = free.get(name, 0) + amount
            steps.free[at], steps.pods[at] = free, steps.pods[at] + 1

    def _steps(self, node: int) -> _NodeSteps:
        steps = self.nodes.get(node)
        if steps is None:
            steps = self.nodes[node] = _NodeSteps([self.now], [self.free0[node]],
                                                  [self.pods0[node]])  # fmt: skip
        return steps

    def _fits(self, rooms: _ShapeRooms, node: int) -> list[int]:
        """The node's fit count for the shape at each of its steps."""
        steps, requests = self.nodes[node], rooms.shape.requests
        if rooms.static[node] is not None:
            return [0] * len(steps.times)
        return [fit_count(free, pods, requests)
                for free, pods in zip(steps.free, steps.pods, strict=True)]  # fmt: skip

    def _recount(
        self,
        rooms: _ShapeRooms,
        key: tuple[Shape, str | None],
        node: int,
        split: int,
        cut: int,
        taking: bool,
        changed: _Changes,
    ) -> None:
        """The node's fit counts anew for its first `cut` steps (the rest did not
        change; `taking`: they only lost room); each level's domain of it gets the
        difference."""
        steps, requests = self.nodes[node], rooms.shape.requests
        before = _counts_split(rooms, node, split)
        if taking and not any(before[:cut]):  # it took no such pod then: nor will it now
            rooms.counts[node] = before
            return
        after = [fit_count(steps.free[at], steps.pods[at], requests) for at in range(cut)]
        rooms.counts[node] = after + before[cut:]
        times: list[float] = []
        deltas: list[int] = []
        previous = 0
        for at, new in enumerate(after):
            if new - before[at] != previous:
                times.append(steps.times[at])
                deltas.append(new - before[at] - previous)
                previous = new - before[at]
        if previous and cut < len(steps.times):
            times.append(steps.times[cut])
            deltas.append(-previous)
        if not times:
            return
        ancestors = rooms.tree.node_ancestors[node]
        events = list(zip(times, deltas, strict=True))
        for depth in rooms.levels:
            changed.setdefault((key, depth, ancestors[depth + 1]), []).extend(events)

    def _rooms(self, shape: Shape, topology: str | None) -> _ShapeRooms:
        key = (shape, topology)
        rooms = self.shapes.get(key)
        if rooms is None:
            static = self.state.static(shape.constraints)
            constant = list(self.state.shape(shape).node) if self.pristine else [
                0 if cause is not None else fit_count(free, pods, shape.requests)
                for free, pods, cause in zip(self.free0, self.pods0, static, strict=True)]
            rooms = self.shapes[key] = _ShapeRooms(shape, self.state.tree(topology), static,
                                                   constant)  # fmt: skip
            for node in self.nodes:
                if static[node] is None:
                    rooms.counts[node] = self._fits(rooms, node)
        return rooms

    def _level(self, rooms: _ShapeRooms, depth: int) -> _Level:
        """The level's room over time (built when first asked, then kept current)."""
        level = rooms.levels.get(depth)
        if level is not None:
            return level
        tree = rooms.tree
        domains = (0,) if depth < 0 else tree.by_level[depth]
        position = {domain: at for at, domain in enumerate(domains)}
        base = [0] * len(domains)
        events: dict[int, list[tuple[float, int]]] = {}
        for node, ancestors in enumerate(tree.node_ancestors):
            if rooms.static[node] is not None:
                continue
            at = position[ancestors[depth + 1]]
            counts = rooms.counts.get(node)
            if counts is None:
                base[at] += rooms.constant[node]
                continue
            base[at] += counts[0]
            times = self.nodes[node].times
            for moment, count, previous in zip(times[1:], counts[1:], counts, strict=False):
                if count != previous:
                    events.setdefault(at, []).append((moment, count - previous))
        steps = [_built(self.now, base[at], events.get(at, ())) for at in range(len(domains))]
        level = rooms.levels[depth] = _Level(domains, position, steps)
        return level

    def _tightest(
        self, rooms: _ShapeRooms, limit: int, pods: int, at: float
    ) -> tuple[int, int]:
        """Of the domains of the allowed level that take the gang at `at`, the one with
        the least room then (as `place_gang` keeps big domains whole), and down from it
        the tightest child that still takes it, while one does."""
        tree = rooms.tree
        level = self._level(rooms, limit)
        firsts = level.firsts(pods)
        ready = [level.domains[i] for i, first in enumerate(firsts) if first <= at]
        depth, domain = limit, self._least_room(rooms, ready, pods, at)
        while tree.children[domain]:  # a domain of one node: the node choice's to make
            ready = [child for child in tree.children[domain] if tree.node_counts[child] > 1
                     and self._first(rooms, child, pods) <= at]  # fmt: skip
            if not ready:
                break
            domain = self._least_room(rooms, ready, pods, at)
            depth = tree.level_of[domain]
        return depth, domain

    def _first(self, rooms: _ShapeRooms, domain: int, pods: int) -> float:
        level = self._level(rooms, rooms.tree.level_of[domain])
        return level.firsts(pods)[level.position[domain]]

    def _least_room(
        self, rooms: _ShapeRooms, domains: Sequence[int], pods: int, at: float
    ) -> int:
        """The domain with the least room at `at` (the first of equals), among the first
        `_TIES` given."""
        best, least = domains[0], -1
        for domain in domains[:_TIES]:
            level = self._level(rooms, rooms.tree.level_of[domain])
            room = level.steps[level.position[domain]].at(at)
            if least < 0 or room < least:
                best, least = domain, room
        return best

    def _nodes(self, rooms: _ShapeRooms, domain: int, pods: int, at: float) -> list[int]:
        """As few nodes of the domain as take the gang at `at`: the roomiest first, the
        last pods on the tightest node that takes them all."""
        room: list[tuple[int, int]] = []
        for node in rooms.tree.nodes_in(domain):
            count = self._count_at(rooms, node, at)
            if count > 0:
                room.append((count, node))
        room.sort()
        sizes = [count for count, _ in room]
        chosen: list[int] = []
        left, end = pods, len(room)
        while left > 0 and end > 0:
            at_least = bisect_left(sizes, left, 0, end)
            if at_least < end:  # the tightest node that takes the rest
                return chosen + [room[at_least][1]] * left
            end -= 1
            count, node = room[end]  # else the roomiest left takes what it can
            chosen.extend([node] * count)
            left -= count
        raise AssertionError("the domain takes the gang at that moment")  # pragma: no cover

    def _count_at(self, rooms: _ShapeRooms, node: int, at: float) -> int:
        counts = rooms.counts.get(node)
        if counts is None:
            return rooms.constant[node]
        return counts[bisect_right(self.nodes[node].times, at) - 1]


def _counts_split(rooms: _ShapeRooms, node: int, split: int) -> list[int]:
    """The node's fit counts as they were, with the step split at `split` (-1: none)
    counted twice, as the split made it."""
    counts = rooms.counts.get(node)
    if counts is None:
        return [rooms.constant[node]] * (2 if split > 0 else 1)
    if split > 0:
        counts = counts[:split] + counts[split - 1 :]
    return counts


def _built(now: float, base: int, events: Sequence[tuple[float, int]]) -> _Steps:
    if not events:
        return _Steps([now], [base])
    ordered = sorted(events)
    times = [now]
    counts = [base]
    for moment, delta in ordered:
        if moment == times[-1]:
            counts[-1] += delta
        else:
            times.append(moment)
            counts.append(counts[-1] + delta)
    return _Steps(times, counts)
