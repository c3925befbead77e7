"""Where a waiting gang fits once some units are gone: per candidate domain at the
gang's preferred (else required) level, climbing to the required one, the cheapest
victim set; the cheapest domain wins and is confirmed with `place_gang` itself.

Elastic pods are tried before whole gangs, at each level. Pods already on their way
out (terminating, or chosen as victims earlier in the cycle) count as gone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from phalanx.core.model.inputs import PodInfo
from phalanx.core.placement.gang import GangRequest, place_gang
from phalanx.core.placement.routes import Route
from phalanx.core.placement.state import CycleState
from phalanx.core.placement.static_room import static_room, static_takes
from phalanx.core.preemption.room import DomainRoom, Vector, resource_names
from phalanx.core.preemption.search import Allowed, Cost, choose
from phalanx.core.preemption.units import Unit
from phalanx.topology.tree import ROOT, ROOT_LEVEL

MAX_CONFIRMATIONS = 8


@dataclass(frozen=True, slots=True)
class Found:
    """Victims `units` free room in `domain` (at `level`); the gang would use `nodes`;
    `waiting` pods there are already terminating."""

    units: tuple[Unit, ...]
    nodes: tuple[int, ...]
    domain: int
    level: int
    waiting: int


def never_fits(request: GangRequest, state: CycleState) -> bool:
    """Not even an empty cluster could hold the gang: no search needed."""
    return any(not static_takes(state, shape, n) for shape, n in request.demand)


class Finder:
    """Per-cycle indexes for the search: units by domain, and pods on their way out.
    The units are built on first use (`build`); `bounds` (`priority_bounds`) answer
    first whatever they settle, so a gang no eviction can help costs no units."""

    def __init__(
        self,
        state: CycleState,
        build: Callable[[], tuple[Unit, ...]],
        bounds: Mapping[str, tuple[int, int]],
    ) -> None:
        self.state = state
        self.bounds = bounds
        self._build = build
        self.leaving: list[tuple[PodInfo, int]] = []
        position = state.index.node_position
        for pod in state.index.pods:
            if pod.terminating and pod.node_name in position and not pod.finished:
                self.leaving.append((pod, position[pod.node_name]))
        self._by_domain: dict[tuple[str | None, int], dict[int, list[Unit]]] = {}
        self._inside: dict[tuple[str | None, int], frozenset[int]] = {}
        self._vectors: dict[tuple[str, ...], dict[int, Vector]] = {}
        self._kinds: dict[tuple[str | None, int, int, bool, str | None], list[Unit]] = {}

    @cached_property
    def units(self) -> tuple[Unit, ...]:
        """Every evictable unit, cheapest first (built once, when first asked for)."""
        return self._build()

    def only_priority(self, priority: int) -> bool:
        """Is every unit of this priority (priorities not in use)? The bounds say,
        unless some eviction is refused and they say no (they may then count pods that
        are in no unit)."""
        if all(low == high == priority for low, high in self.bounds.values()):
            return True
        if not self.state.index.eviction_refused:
            return False
        return all(u.priority == priority for u in self.units)

    def leave(self, units: Sequence[Unit]) -> None:
        """Victims just chosen: later searches in this cycle count their room as freed."""
        for unit in units:
            self.leaving.extend(zip(unit.pods, unit.nodes, strict=True))

    def find(
        self,
        request: GangRequest,
        route: Route,
        eligible: Callable[[Unit], bool],
        allowed: Allowed,
        cost: Callable[[Sequence[Unit]], Cost],
        phases: tuple[bool, ...] = (False, True),
        prefer: frozenset[int] = frozenset(),
        own: str | None = None,
    ) -> Found | None:
        """The cheapest way to make room, or None when no eligible units suffice.
        `own`: units of this queue are tried after all others (see `cost_of`)."""
        tree = self.state.tree(request.topology)
        start = route.preferred if route.preferred is not None else route.limit
        for level in range(start, route.limit - 1, -1):
            domains = tree.by_level[level] if level != ROOT_LEVEL else (ROOT,)
            for whole in phases:
                options = self._options(
                    request, level, domains, eligible, allowed, cost, whole, own
                )
                options.sort(key=lambda o: (o[0], o[1] & prefer == frozenset(), o[2]))
                for _, _, domain, chosen in options[:MAX_CONFIRMATIONS]:
                    found = self._confirm(request, level, domain, chosen)
                    if found is not None:
                        return found
        return None

    def _options(
        self,
        request: GangRequest,
        level: int,
        domains: Sequence[int],
        eligible: Callable[[Unit], bool],
        allowed: Allowed,
        cost: Callable[[Sequence[Unit]], Cost],
        whole: bool,
        own: str | None = None,
    ) -> list[tuple[Cost, frozenset[int], int, tuple[Unit, ...]]]:
        state, topology = self.state, request.topology
        by_domain = self._units_by_domain(topology, level)
        rooms = [static_room(state, shape, topology) for shape, _ in request.demand]
        options = []
        for domain in domains:
            if any(room[domain] < n for room, (_, n) in zip(rooms, request.demand, strict=True)):
                continue
            units = self._candidates(by_domain, topology, level, domain, whole, own)
            inside = self._nodes_inside(topology, domain)
            leaving = [(p, n) for p, n in self.leaving if n in inside]
            if not leaving and next(filter(eligible, units), None) is None:
                continue
            vectors = self._vectors.setdefault(resource_names(request.demand), {})
            room = DomainRoom(state, request.demand, topology, domain, inside, vectors)
            room.take(leaving)
            chosen = choose(room, units, eligible, allowed, cost)
            if chosen is not None:
                options.append((cost(chosen), inside, domain, chosen))
        return options

    def _confirm(
        self, request: GangRequest, level: int, domain: int, chosen: tuple[Unit, ...]
    ) -> Found | None:
        """Run the real placement with the victims (and leaving pods) gone."""
        state = self.state
        inside = self._nodes_inside(request.topology, domain)
        leaving = [(p, n) for p, n in self.leaving if n in inside]
        freed = leaving + [pair for u in chosen for pair in zip(u.pods, u.nodes, strict=True)]
        for pod, node in freed:
            state.unplace(node, pod)
        placed = place_gang(state, request)
        if placed is not None:
            for pod, node in placed.assignments:
                state.unplace(node, pod)
        for pod, node in freed:
            state.place(node, pod)
        if placed is None:
            return None
        nodes = tuple(sorted({node for _, node in placed.assignments}))
        return Found(chosen, nodes, domain, level, len(leaving))

    def _candidates(
        self,
        by_domain: dict[int, list[Unit]],
        topology: str | None,
        level: int,
        domain: int,
        whole: bool,
        own: str | None,
    ) -> list[Unit]:
        """The domain's units of one kind (whole or elastic), cheapest first, those of
        queue `own` last; the same for every search of the cycle, so kept (eligibility,
        which differs per gang, is asked by `choose` of the units it reaches)."""
        key = (topology, level, domain, whole, own)
        units = self._kinds.get(key)
        if units is None:
            units = [u for u in by_domain.get(domain, ()) if u.whole == whole]
            if own is not None:
                units.sort(key=lambda u: u.queue == own)  # stable: cheapest first within
            self._kinds[key] = units
        return units

    def _units_by_domain(self, topology: str | None, level: int) -> dict[int, list[Unit]]:
        key = (topology, level)
        found = self._by_domain.get(key)
        if found is None and level == ROOT_LEVEL:  # every unit is in the cluster
            found = self._by_domain[key] = {ROOT: list(self.units)} if self.units else {}
        if found is None:
            tree = self.state.tree(topology)
            found = {}
            for unit in self.units:
                domains = {tree.node_ancestors[node][level + 1] for node in unit.nodes}
                for domain in sorted(domains):
                    found.setdefault(domain, []).append(unit)
            self._by_domain[key] = found
        return found

    def _nodes_inside(self, topology: str | None, domain: int) -> frozenset[int]:
        key = (topology, domain)
        inside = self._inside.get(key)
        if inside is None:
            inside = self._inside[key] = frozenset(self.state.tree(topology).nodes_in(domain))
        return inside
