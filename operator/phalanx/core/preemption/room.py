"""How many pods of a gang one domain could take if some running pods were gone.

Counts start from the cycle state's per-domain aggregates and are corrected only on
the nodes the removed pods touch, so trying a unit costs a few `fit_count` calls, not
a pass over the domain. For a gang of one shape without sub-groups these counts are
exactly what `place_gang` needs; otherwise they are a necessary condition and the
final choice is checked with `place_gang` itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from phalanx.core.device_choice import DEVICE
from phalanx.core.model import PodInfo
from phalanx.core.names import GPU
from phalanx.core.preemption.units import Unit
from phalanx.core.shapes import Shape
from phalanx.core.state import CycleState

Vector = tuple[tuple[int, tuple[int, ...], int], ...]


class DomainRoom:
    """Room for `demand` inside one domain, as pods are taken away and put back.

    Only the resources the gang asks for matter; a unit's pods are summed per node into
    a vector of those resources once (`vectors`, shared by every room of the cycle that
    asks for the same resources), so taking a unit costs one update per node."""

    def __init__(
        self,
        state: CycleState,
        demand: tuple[tuple[Shape, int], ...],
        topology: str | None,
        domain: int,
        inside: frozenset[int] | None,
        vectors: dict[int, Vector] | None = None,
    ) -> None:
        self.state = state
        self.demand = demand
        self.inside = inside  # nodes of the domain (None: every node)
        self.counts = [state.shape(shape) for shape, _ in demand]
        self.totals = [state.domain_counts(shape, topology)[domain] for shape, _ in demand]
        self.needs = [count for _, count in demand]
        self.names = resource_names(demand)
        column = {name: i for i, name in enumerate(self.names)}
        self.asks = [
            tuple((column[name], name, amount) for name, amount in shape.requests)
            for shape, _ in demand
        ]
        self.freed: dict[int, list[int]] = {}
        self.freed_pods: dict[int, int] = {}
        self.rooms: dict[int, list[int]] = {}
        self.touched: dict[int, int] = {}  # how many taken units (or batches) free a node
        self.vectors: dict[int, Vector] = {} if vectors is None else vectors

    def fits(self) -> bool:
        return all(total >= count for total, count in zip(self.totals, self.needs, strict=True))

    def take(self, pods: Iterable[tuple[PodInfo, int]]) -> None:
        self._apply(self._vector_of(pods), 1)

    def give_back(self, pods: Iterable[tuple[PodInfo, int]]) -> None:
        self._apply(self._vector_of(pods), -1)

    def take_units(self, units: Iterable[Unit]) -> None:
        for unit in units:
            self._apply(self._unit_vector(unit), 1)

    def give_units(self, units: Iterable[Unit]) -> None:
        for unit in units:
            self._apply(self._unit_vector(unit), -1)

    def _unit_vector(self, unit: Unit) -> Vector:
        vector = self.vectors.get(id(unit))
        if vector is None:
            vector = self.vectors[id(unit)] = self._vector_of(
                zip(unit.pods, unit.nodes, strict=True)
            )
        return vector

    def _vector_of(self, pods: Iterable[tuple[PodInfo, int]]) -> Vector:
        names = self.names
        per_node: dict[int, list[int]] = {}
        for pod, node in pods:
            amounts = per_node.get(node)
            if amounts is None:
                amounts = per_node[node] = [0] * (len(names) + 1)
            requests = pod.requests
            for i, name in enumerate(names):
                amounts[i] += requests.get(name, 0)
            if pod.fractional and GPU in names:
                amounts[names.index(GPU)] += self._shared_part(pod, node)
            amounts[-1] += 1
        return tuple((node, tuple(a[:-1]), a[-1]) for node, a in per_node.items())

    def _shared_part(self, pod: PodInfo, node: int) -> int:
        """What a fractional victim frees of whole GPUs, estimated high: its part plus
        what is still free on its GPU (the GPU is whole again only once all its sharers
        go, and the estimate of each of them covers that). Never short, so no option is
        missed; the confirming placement decides with the exact devices."""
        shares = self.state.index.device_usage(node).shares.get(pod.key, ())
        used = self.state.devices(node)
        return sum(min(DEVICE, s.milli + max(0, DEVICE - used[s.index])) for s in shares)

    def _apply(self, vector: Vector, sign: int) -> None:
        inside, width, freed_of, pods_of = self.inside, len(self.names), self.freed, self.freed_pods
        for node, amounts, count in vector:
            if inside is not None and node not in inside:
                continue
            freed = freed_of.get(node)
            if freed is None:
                freed = freed_of[node] = [0] * width
                pods_of[node] = 0
            for i, amount in enumerate(amounts):
                freed[i] += sign * amount
            pods_of[node] += sign * count
            self.touched[node] = self.touched.get(node, 0) + sign
            after = self._room(node, freed, pods_of[node])
            before = self.rooms.get(node)
            totals = self.totals
            for i, new in enumerate(after):
                totals[i] += new - (self.counts[i].node[node] if before is None else before[i])
            self.rooms[node] = after

    def fits_without(self, units: Sequence[Unit]) -> bool:
        """Would the gang still fit with these units (taken earlier) given back? The
        room is not changed: pruning asks this of every unit and keeps most. A unit
        alone on its nodes gives back exactly the room it added, read off `rooms`."""
        inside, freed_of, pods_of = self.inside, self.freed, self.freed_pods
        totals = list(self.totals)
        if len(units) == 1:
            vector = self._unit_vector(units[0])
            nodes = [node for node, _, _ in vector if inside is None or node in inside]
            if all(self.touched[node] == 1 for node in nodes):
                for i, counts in enumerate(self.counts):
                    totals[i] -= sum(self.rooms[node][i] - counts.node[node] for node in nodes)
                return all(t >= count for t, count in zip(totals, self.needs, strict=True))
        changed: dict[int, tuple[list[int], int]] = {}
        for unit in units:
            for node, amounts, count in self._unit_vector(unit):
                if inside is not None and node not in inside:
                    continue
                freed, pods = changed.get(node) or (list(freed_of[node]), pods_of[node])
                for i, amount in enumerate(amounts):
                    freed[i] -= amount
                changed[node] = (freed, pods - count)
        for node, (freed, pods) in changed.items():
            before = self.rooms.get(node)
            for i, new in enumerate(self._room(node, freed, pods)):
                totals[i] += new - (self.counts[i].node[node] if before is None else before[i])
        return all(total >= count for total, count in zip(totals, self.needs, strict=True))

    def _room(self, node: int, freed: list[int], freed_pods: int) -> list[int]:
        """The node's room for each shape with the freed requests added back (inlined
        `fit_count`: this is the search's inner loop)."""
        base = self.state.free[node]
        pods_free = self.state.pods_free[node] + freed_pods
        after: list[int] = []
        for i, asks in enumerate(self.asks):
            new = pods_free if self.counts[i].static[node] is None else 0
            for column, name, amount in asks:
                if new <= 0:
                    break
                fits = (base.get(name, 0) + freed[column]) // amount
                if fits < new:
                    new = fits
            after.append(new if new > 0 else 0)
        return after


def resource_names(demand: tuple[tuple[Shape, int], ...]) -> tuple[str, ...]:
    return tuple(sorted({name for shape, _ in demand for name, _ in shape.requests}))
