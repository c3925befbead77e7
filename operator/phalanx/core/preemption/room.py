"""How many pods of a gang one domain could take if some running pods were gone.

Counts start from the cycle state's per-domain aggregates and are corrected only on
the nodes the removed pods touch, so trying a unit costs a few `fit_count` calls, not
a pass over the domain. For a gang of one shape without sub-groups these counts are
exactly what `place_gang` needs; otherwise they are a necessary condition and the
final choice is checked with `place_gang` itself. GPUs are counted per device, as the
state counts them (`phalanx.core.snapshot.devices`): a device is free for a whole-GPU pod only
once everything on it is gone, and a fractional pod needs one device with its part free.
On a node where each pod holds whole devices of its own (`CycleState.owned_whole_free`)
a pod gone frees exactly its whole GPUs, so there the devices are not listed: a count
of whole GPUs freed gives the same room (most nodes of a cluster without fractional
pods: not listing them took bench-core's preempt cycle from 0.49 to 0.25 s under
cProfile).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from copy import copy
from operator import ge

from phalanx.core.model.device_share import DEVICE
from phalanx.core.model.inputs import PodInfo
from phalanx.core.model.names import GPU, PodKey
from phalanx.core.placement.state import CycleState
from phalanx.core.preemption.units import Unit
from phalanx.core.snapshot.devices import holds_gpus, slots, whole_devices, whole_free
from phalanx.core.snapshot.shapes import Shape

Vector = tuple[
    tuple[int, tuple[int, ...], int, tuple[tuple[int, int], ...], int, tuple[PodKey, ...]], ...
]
"""Per node: the freed requests (the GPU column left 0), the pods, the freed (device,
milli) parts of the node's GPU devices, and on a node where each pod holds whole
devices of its own (by the snapshot: `ClusterIndex.owned_whole_free`) instead of the
parts, the whole GPUs freed and the pods that held them (their parts are looked up
only if the state has listed the node's devices)."""


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
        self.freed_whole: dict[int, int] = {}  # whole GPUs freed, where counted so
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
        twin.freed_whole = dict(self.freed_whole)
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
        """The pods' requests and GPUs summed per node. The GPU column stays 0: `_room`
        counts whole GPUs from the devices or the whole GPUs freed (the vector is shared
        by rooms of any demand with these resource names, so the GPUs are kept whatever
        it asks). Whether a node's GPUs are whole counts is the snapshot's to say, the
        same for the whole cycle, as the vector is."""
        names, gpu, index = self.names, self.gpu, self.state.index
        owned = index.owned_whole_free
        per_node: dict[int, tuple[list[int], int, list[tuple[int, int]], int, list[PodKey]]] = {}
        for pod, node in pods:
            requests = pod.requests
            row = [requests.get(name, 0) for name in names]
            if gpu >= 0:
                row[gpu] = 0
            seen = per_node.get(node)
            if seen is None:
                count, parts, whole, holders = 1, [], 0, []
            else:
                row = [a + b for a, b in zip(row, seen[0], strict=True)]
                count, parts, whole, holders = seen[1] + 1, seen[2], seen[3], seen[4]
            if holds_gpus(pod):
                if owned(node) is None:
                    shares = index.device_usage(node).shares.get(pod.key, ())
                    parts += [(s.index, s.milli) for s in shares]
                else:
                    whole += whole_devices(pod)
                    holders.append(pod.key)
            per_node[node] = (row, count, parts, whole, holders)
        return tuple(
            (node, tuple(row), count, tuple(parts), whole, tuple(holders))
            for node, (row, count, parts, whole, holders) in per_node.items()
        )

    def _counts_whole(self, node: int) -> bool:
        """Are the node's freed GPUs counted whole (`freed_whole`) rather than per device?
        Decided when a room first frees GPUs there, from the state as it is (a room
        lives between two changes of the state)."""
        if node in self.freed_whole:
            return True
        return node not in self.freed_devices and self.state.owned_whole_free(node) is not None

    def _parts(self, node: int, holders: tuple[PodKey, ...]) -> tuple[tuple[int, int], ...]:
        """The (device, milli) parts the pods hold on a node whose devices the state has
        listed (a pod was placed or taken off there this cycle)."""
        shares = self.state.index.device_usage(node).shares
        return tuple((s.index, s.milli) for key in holders for s in shares.get(key, ()))

    def _free_devices(self, node: int, parts: tuple[tuple[int, int], ...], sign: int) -> None:
        devices = self.freed_devices.get(node)
        if devices is None:
            devices = self.freed_devices[node] = [0] * self.state.index.nodes[node].gpu_count
        for index, milli in parts:
            devices[index] += sign * milli

    def _apply(self, vector: Vector, sign: int) -> None:
        inside, width, freed_of, pods_of = self.inside, len(self.names), self.freed, self.freed_pods
        touched, rooms, totals, counts = self.touched, self.rooms, self.totals, self.counts
        whole_of, devices_of, room = self.freed_whole, self.freed_devices, self._room
        for node, amounts, count, parts, whole, holders in vector:
            if inside is not None and node not in inside:
                continue
            if whole:
                if node in whole_of or self._counts_whole(node):
                    whole_of[node] = whole_of.get(node, 0) + sign * whole
                else:
                    parts = self._parts(node, holders)
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
            after = room(node, freed, pods, devices_of.get(node), whole_of.get(node, 0))
            before = rooms.get(node)
            for i, new in enumerate(after):
                totals[i] += new - (counts[i].node[node] if before is None else before[i])
            rooms[node] = after

    def fits_without(self, units: Sequence[Unit]) -> bool:
        """Would the gang still fit with these units (taken earlier) given back? The
        room is not changed: pruning asks this of every unit and keeps most. A unit
        alone on its nodes gives back exactly the room it added, read off `rooms`."""
        inside, freed_of, pods_of = self.inside, self.freed, self.freed_pods
        whole_of = self.freed_whole
        totals = list(self.totals)
        if len(units) == 1 and self._alone(units[0], totals):
            return all(t >= count for t, count in zip(totals, self.needs, strict=True))
        changed: dict[int, tuple[list[int], int, list[int], int]] = {}
        for unit in units:
            for node, amounts, count, parts, whole, holders in self._unit_vector(unit):
                if inside is not None and node not in inside:
                    continue
                freed, pods, devices, gpus = changed.get(node) or (
                    list(freed_of[node]), pods_of[node], self._devices_copy(node),
                    whole_of.get(node, 0))
                for i, amount in enumerate(amounts):
                    freed[i] -= amount
                if whole and node in whole_of:
                    gpus -= whole
                elif whole:
                    parts = self._parts(node, holders)
                for index, milli in parts:
                    devices[index] -= milli
                changed[node] = (freed, pods - count, devices, gpus)
        for node, (freed, pods, devices, gpus) in changed.items():
            before = self.rooms.get(node)
            for i, new in enumerate(self._room(node, freed, pods, devices, gpus)):
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
        self, node: int, freed: list[int], freed_pods: int, devices: list[int] | None,
        whole: int,
    ) -> list[int]:
        """The node's room for each shape with the freed requests added back (inlined
        `fit_count`: this is the search's inner loop). `devices`: milli freed on each GPU
        device; whole GPUs are those the state has free plus the devices left with
        nothing on them (`whole_free`), a fractional shape is capped by the `slots` of
        the devices as they would be, as `CycleState.shape` caps it now. `whole`: the
        whole GPUs freed on a node whose devices are not listed (`_counts_whole`): the
        devices left with nothing on them are exactly those, added to the ones free."""
        state = self.state
        base = state.free[node]
        pods_free = state.pods_free[node] + freed_pods
        used: list[int] | None = None
        if whole:
            if self.gpu >= 0:
                freed = list(freed)
                freed[self.gpu] += whole * DEVICE
        elif devices is not None and any(devices):
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
                if used is not None:
                    fits = slots(used, milli[node])
                elif whole:
                    fits = self._whole_slots(node, whole, milli[node])
                else:
                    fits = state.slots(node, milli[node])
                if fits < new:
                    new = fits
            after.append(new if new > 0 else 0)
        return after

    def _whole_slots(self, node: int, whole: int, milli: int) -> int:
        """`slots` of a node counted whole with `whole` GPUs freed: every device holds
        nothing or a whole pod's all, so each free one takes DEVICE // milli."""
        free = self.state.owned_whole_free(node)
        if free is None or milli <= 0 or milli > DEVICE:
            return 0
        return (free + whole) * (DEVICE // milli)


class KeptRoom:
    """The room before a walk (`start`) with the units pruning keeps taken, filled only
    when that could make the gang fit. Pruning asks after each unit kept whether the kept
    ones alone make it fit (then it drops every unit below); taking each into a second
    room was half of pruning in bench-core's preempt (547 of 613 units kept there). A
    node's room with the kept units taken is at most its room in the walk's room
    (`ceiling`: it holds them and the units not yet pruned, and from here on only gives
    back), so `upper` (the second room's totals plus, on each node touched by a unit kept
    since it was last filled, the ceiling's room there less the second room's) bounds
    its totals: below the demand it cannot fit and is not filled. Where the ceiling holds
    no other unit on those nodes (`touched` equals the kept units there) its rooms are
    the second room's, and `upper` answers without filling it; otherwise it is filled
    and asked. Either way the answer is the one filling it every time gives: rooms count
    as the state does, and the walk listed every device they need."""

    def __init__(self, start: DomainRoom, ceiling: DomainRoom) -> None:
        self.start = start
        self.ceiling = ceiling
        self.pending: list[Unit] = []
        self.seen: set[int] = set()  # nodes counted in `upper` since the last fill
        self.kept: dict[int, int] = {}  # kept units on each node of the domain
        self.upper = list(start.totals)

    def keep(self, unit: Unit) -> bool:
        """Take the unit as kept; does the gang fit with the kept units alone?"""
        start, upper, seen, kept = self.start, self.upper, self.seen, self.kept
        inside, most, now, counts = start.inside, self.ceiling.rooms, start.rooms, start.counts
        self.pending.append(unit)
        for node, *_ in start._unit_vector(unit):
            if inside is not None and node not in inside:
                continue
            kept[node] = kept.get(node, 0) + 1
            if node in seen:
                continue
            seen.add(node)
            ceiling, before = most[node], now.get(node)
            for i, shape in enumerate(counts):
                upper[i] += ceiling[i] - (shape.node[node] if before is None else before[i])
        if not all(map(ge, upper, start.needs)):
            return False
        exact = self._refresh()
        if not all(map(ge, self.upper, start.needs)):
            return False
        if exact:
            return True
        start.take_units(self.pending)
        self.pending.clear()
        seen.clear()
        self.upper = list(start.totals)
        return start.fits()

    def _refresh(self) -> bool:
        """Count `upper` again from the ceiling's rooms as they are now (lower than when
        first counted, as it gave units back); are they exactly the second room's?"""
        start, kept, touched = self.start, self.kept, self.ceiling.touched
        most, now, counts = self.ceiling.rooms, start.rooms, start.counts
        upper = list(start.totals)
        exact = True
        for node in self.seen:
            ceiling, before = most[node], now.get(node)
            for i, shape in enumerate(counts):
                upper[i] += ceiling[i] - (shape.node[node] if before is None else before[i])
            if touched[node] != kept[node]:
                exact = False
        self.upper = upper
        return exact


def resource_names(demand: tuple[tuple[Shape, int], ...]) -> tuple[str, ...]:
    return tuple(sorted({name for shape, _ in demand for name, _ in shape.requests}))
