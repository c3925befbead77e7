"""How many pods of a gang one domain could take if some running pods were gone.

Counts start from the cycle state's per-domain aggregates and are corrected only on
the nodes the removed pods touch, so trying a unit costs a few `fit_count` calls, not
a pass over the domain. For a gang of one shape without sub-groups these counts are
exactly what `place_gang` needs; otherwise they are a necessary condition and the
final choice is checked with `place_gang` itself. GPUs are counted per device, as the
state counts them (`phalanx.core.devices`): a device is free for a whole-GPU pod only
once everything on it is gone, and a fractional pod needs one device with its part free.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from copy import copy
from operator import ge

from phalanx.core.device_choice import DEVICE
from phalanx.core.devices import holds_gpus, slots, whole_free
from phalanx.core.model import PodInfo
from phalanx.core.names import GPU
from phalanx.core.preemption.units import Unit
from phalanx.core.shapes import Shape
from phalanx.core.state import CycleState

Vector = tuple[tuple[int, tuple[int, ...], int, tuple[tuple[int, int], ...]], ...]
"""Per node: the freed requests (the GPU column left 0), the pods, and the freed
(device, milli) parts of the node's GPU devices."""


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
        self._shapes = [
            (asks, counts.static, counts.milli)
            for asks, counts in zip(self.asks, self.counts, strict=True)
        ]
        self.gpu = self.names.index(GPU) if GPU in self.names else -1
        self.freed: dict[int, list[int]] = {}
        self.freed_devices: dict[int, list[int]] = {}  # milli freed per device
        self.freed_pods: dict[int, int] = {}
        self.rooms: dict[int, list[int]] = {}
        self.touched: dict[int, int] = {}  # how many taken units (or batches) free a node
        self.vectors: dict[int, Vector] = {} if vectors is None else vectors

    def fits(self) -> bool:
        return all(map(ge, self.totals, self.needs))

    def copy(self) -> DomainRoom:
        """A room as this one is now, taken from and given back to apart from it."""
        twin = copy(self)
        twin.totals = list(self.totals)
        twin.freed = {node: list(freed) for node, freed in self.freed.items()}
        twin.freed_pods = dict(self.freed_pods)
        twin.freed_devices = {node: list(freed) for node, freed in self.freed_devices.items()}
        twin.rooms = dict(self.rooms)  # each node's list is replaced, never changed
        twin.touched = dict(self.touched)
        return twin

    def take(self, pods: Iterable[tuple[PodInfo, int]]) -> None:
        self._apply(self._vector_of(pods), 1)

    def give_back(self, pods: Iterable[tuple[PodInfo, int]]) -> None:
        self._apply(self._vector_of(pods), -1)

    def take_until_fits(
        self, units: Iterable[Unit], allowed: Callable[[Sequence[Unit]], bool]
    ) -> list[Unit] | None:
        """Take the allowed units in turn until the gang fits; those taken (None: it
        never fits). A search's walk: ~1,300 units per search in the Alibaba
        simulation's busy cycles, so a unit costs one `_apply` and no other call of
        ours. `allowed` is asked of the taken list with the unit appended, not of a
        copy (a copy per unit was quadratic)."""
        chosen: list[Unit] = []
        vectors, apply, totals, needs = self.vectors, self._apply, self.totals, self.needs
        for unit in units:
            chosen.append(unit)
            if not allowed(chosen):
                chosen.pop()
                continue
            vector = vectors.get(id(unit))
            apply(self._unit_vector(unit) if vector is None else vector, 1)
            if all(map(ge, totals, needs)):
                return chosen
        return None

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
        """The pods' requests and device parts summed per node. The GPU column stays 0:
        `_room` counts whole GPUs from the devices (the vector is shared by rooms of any
        demand with these resource names, so the parts are kept whatever it asks)."""
        names, gpu, usage = self.names, self.gpu, self.state.index.device_usage
        per_node: dict[int, tuple[list[int], int, list[tuple[int, int]]]] = {}
        for pod, node in pods:
            requests = pod.requests
            row = [requests.get(name, 0) for name in names]
            if gpu >= 0:
                row[gpu] = 0
            seen = per_node.get(node)
            if seen is not None:
                row = [a + b for a, b in zip(row, seen[0], strict=True)]
            parts = [] if seen is None else seen[2]
            if holds_gpus(pod):
                parts += [(s.index, s.milli) for s in usage(node).shares.get(pod.key, ())]
            per_node[node] = (row, 1 if seen is None else seen[1] + 1, parts)
        return tuple(
            (node, tuple(row), count, tuple(parts))
            for node, (row, count, parts) in per_node.items()
        )

    def _free_devices(self, node: int, parts: tuple[tuple[int, int], ...], sign: int) -> None:
        devices = self.freed_devices.get(node)
        if devices is None:
            devices = self.freed_devices[node] = [0] * self.state.index.nodes[node].gpu_count
        for index, milli in parts:
            devices[index] += sign * milli

    def _apply(self, vector: Vector, sign: int) -> None:
        inside, width, freed_of, pods_of = self.inside, len(self.names), self.freed, self.freed_pods
        touched, rooms, totals, counts = self.touched, self.rooms, self.totals, self.counts
        for node, amounts, count, parts in vector:
            if inside is not None and node not in inside:
                continue
            if parts:
                self._free_devices(node, parts, sign)
            freed = freed_of.get(node)
            if freed is None:
                freed = freed_of[node] = [0] * width
                pods_of[node] = 0
            for i, amount in enumerate(amounts):
                freed[i] += sign * amount
            pods = pods_of[node] = pods_of[node] + sign * count
            touched[node] = touched.get(node, 0) + sign
            after = self._room(node, freed, pods, self.freed_devices.get(node))
            before = rooms.get(node)
            for i, new in enumerate(after):
                totals[i] += new - (counts[i].node[node] if before is None else before[i])
            rooms[node] = after

    def fits_without(self, units: Sequence[Unit]) -> bool:
        """Would the gang still fit with these units (taken earlier) given back? The
        room is not changed: pruning asks this of every unit and keeps most. A unit
        alone on its nodes gives back exactly the room it added, read off `rooms`."""
        inside, freed_of, pods_of = self.inside, self.freed, self.freed_pods
        totals = list(self.totals)
        if len(units) == 1 and self._alone(units[0], totals):
            return all(t >= count for t, count in zip(totals, self.needs, strict=True))
        changed: dict[int, tuple[list[int], int, list[int]]] = {}
        for unit in units:
            for node, amounts, count, parts in self._unit_vector(unit):
                if inside is not None and node not in inside:
                    continue
                freed, pods, devices = changed.get(node) or (
                    list(freed_of[node]), pods_of[node], self._devices_copy(node))
                for i, amount in enumerate(amounts):
                    freed[i] -= amount
                for index, milli in parts:
                    devices[index] -= milli
                changed[node] = (freed, pods - count, devices)
        for node, (freed, pods, devices) in changed.items():
            before = self.rooms.get(node)
            for i, new in enumerate(self._room(node, freed, pods, devices)):
                totals[i] += new - (self.counts[i].node[node] if before is None else before[i])
        return all(total >= count for total, count in zip(totals, self.needs, strict=True))

    def _alone(self, unit: Unit, totals: list[int]) -> bool:
        """If no other taken pods share a node with the unit, take what it added from
        `totals` and say so."""
        inside, touched, rooms, counts = self.inside, self.touched, self.rooms, self.counts
        nodes = [node for node, *_ in self._unit_vector(unit) if inside is None or node in inside]
        for node in nodes:
            if touched[node] != 1:
                return False
        for node in nodes:
            room = rooms[node]
            for i, shape in enumerate(counts):
                totals[i] -= room[i] - shape.node[node]
        return True

    def _devices_copy(self, node: int) -> list[int]:
        return list(self.freed_devices.get(node, ()))

    def _room(
        self, node: int, freed: list[int], freed_pods: int, devices: list[int] | None
    ) -> list[int]:
        """The node's room for each shape with the freed requests added back (inlined
        `fit_count`: this is the search's inner loop). `devices`: milli freed on each GPU
        device; whole GPUs are those the state has free plus the devices left with
        nothing on them (`whole_free`), a fractional shape is capped by the `slots` of
        the devices as they would be, as `CycleState.shape` caps it now."""
        state = self.state
        base = state.free[node]
        pods_free = state.pods_free[node] + freed_pods
        used: list[int] | None = None
        if devices is not None and any(devices):
            now = state.devices(node)
            used = [taken - part for taken, part in zip(now, devices, strict=True)]
            if self.gpu >= 0:
                freed = list(freed)
                freed[self.gpu] += (whole_free(used) - whole_free(now)) * DEVICE
        after: list[int] = []
        for asks, static, milli in self._shapes:
            new = pods_free if static[node] is None else 0
            for column, name, amount in asks:
                if new <= 0:
                    break
                fits = (base.get(name, 0) + freed[column]) // amount
                if fits < new:
                    new = fits
            if new > 0 and milli is not None:
                fits = state.slots(node, milli[node]) if used is None else slots(used, milli[node])
                if fits < new:
                    new = fits
            after.append(new if new > 0 else 0)
        return after


def resource_names(demand: tuple[tuple[Shape, int], ...]) -> tuple[str, ...]:
    return tuple(sorted({name for shape, _ in demand for name, _ in shape.requests}))
