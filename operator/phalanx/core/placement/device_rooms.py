"""A cycle's GPU devices, node by node: which milli of which device each placement holds,
and how many pods of one part of a device each node still takes.

Part of the cycle state (`CycleState` is a `DeviceRooms`): kept apart because it is a
concern of its own, the device bookkeeping fractional sharing needs, and the state's
capacity and aggregates read it only through `devices`, `slots` and `_within_slots`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from phalanx.core.model.device_share import DEVICE, DeviceShare
from phalanx.core.model.inputs import PodInfo
from phalanx.core.model.names import GPU, PodKey
from phalanx.core.snapshot.devices import known_slots, overcommitted, pod_shares, take
from phalanx.core.snapshot.devices import slots as devices_slots
from phalanx.core.snapshot.index import ClusterIndex

_WHOLE = -1  # `DeviceRooms._rooms`: a node counted from its free GPUs
_UNKNOWN = -2  # `DeviceRooms._rooms`: slots not counted since the node's devices changed


@dataclass(slots=True)
class _Rooms:
    """`CycleState._rooms` of one part of a device: per node, and how many nodes of
    `CycleState._listed` it has been brought up to date with."""

    per_node: list[int]
    seen: int = 0


class DeviceRooms:
    """The device half of `CycleState`; the state's `__init__` sets these fields."""

    index: ClusterIndex
    free: list[dict[str, int]]
    _columns: dict[str, list[int]]
    _used: dict[int, list[int]]
    shares: dict[PodKey, tuple[DeviceShare, ...]]
    _released: dict[PodKey, tuple[int, tuple[DeviceShare, ...]]]
    _shared: set[int]
    _spare: dict[int, int]
    _slot_counts: dict[int, tuple[tuple[int, ...], dict[int, int]]]
    _listed: list[int]
    _rooms_of: dict[int, _Rooms]

    def devices(self, node: int) -> list[int]:
        """Milli held on each GPU device of the node, kept current by placements."""
        used = self._used.get(node)
        if used is None:
            used = self._used[node] = list(self.index.device_usage(node).used)
            self._listed.append(node)
        return used

    def owned_whole_free(self, node: int) -> int | None:
        """Whole devices free on a node where each pod holds whole devices of its own
        (`devices.owned_whole_free`) and whose devices the state never listed (no pod
        placed or taken off there this cycle, so they are as the snapshot has them);
        None elsewhere: count such nodes per device."""
        if node in self._used:
            return None
        return self.index.owned_whole_free(node)

    def shared_nodes(self) -> set[int]:
        """Nodes where a device may be partly held (a fractional pod is or was there this
        cycle): `fragment_free` is 0 on every other node, so a scan for shared parts
        looks at these alone."""
        return self._shared

    def fragment_free(self, node: int) -> int:
        """Milli free on the node's devices that fractional pods share (usable by other
        fractional pods only); 0 on a node where no device is partly held. Kept until a
        pod's devices move on the node."""
        if node not in self._shared:
            return 0
        spare = self._spare.get(node)
        if spare is None:
            used = self.devices(node)
            spare = self._spare[node] = sum(DEVICE - t for t in used if 0 < t < DEVICE)
        return spare

    def slots(self, node: int, milli: int) -> int:
        """Pods taking `milli` of one device the node's devices still take; a node with
        no device partly held needs no device list (its whole free GPUs say it all)."""
        if node in self._used or node in self.index.shared_nodes:
            return self._device_slots(node, milli)
        if milli <= 0 or milli > DEVICE:
            return 0
        return max(self.free[node].get(GPU, 0), 0) // DEVICE * (DEVICE // milli)

    def _device_slots(self, node: int, milli: int) -> int:
        """`slots` of the node's devices, remembered per node until they change: every
        fractional shape of a cycle asks every node with shared devices, and the shapes
        ask a few parts of a device between them. A count is made from the very device
        state the shared `known_slots` entry is keyed by, so what goes into that entry is
        right for every node and cycle that reads it, even if a change to this node's
        devices ever failed to drop its entry here."""
        known = self._slot_counts.get(node)
        if known is None:
            state = tuple(self.devices(node))
            known = self._slot_counts[node] = (state, known_slots(state))
        state, counts = known
        found = counts.get(milli)
        if found is None:
            found = counts[milli] = devices_slots(state, milli)
        return found

    def _within_slots(self, counts: list[int], milli: int) -> list[int]:
        """`min(count, slots(node, milli))` on every node, for one part of a device on
        every node: from the free GPU column on the nodes whose devices are all whole,
        from `_rooms` on the others, in one pass; the slots of a node with a count that
        `_rooms` does not know yet are counted and kept (a scan of every node calling
        `slots` was a twentieth of a simulator cycle; a loop over the nodes with shared
        devices per fractional shape, a fifteenth of a late one)."""
        if milli <= 0 or milli > DEVICE:
            return [0] * len(counts)
        per = DEVICE // milli
        rooms = self._rooms(milli)
        capped = [
            (c if c <= (whole := free // DEVICE * per if free > 0 else 0) else whole)
            if room == _WHOLE
            else (c if c < room else room) if room >= 0 else -1 if c else 0
            for c, free, room in zip(counts, self.column(GPU), rooms, strict=True)
        ]  # min(c, whole GPUs free * per) or min(c, room), without the slower builtin calls
        for node in [i for i, count in enumerate(capped) if count < 0]:
            room = rooms[node] = self._device_slots(node, milli)
            count = counts[node]
            capped[node] = count if count < room else room
        return capped

    def _rooms(self, milli: int) -> list[int]:
        """Per node, `slots(node, milli)` where it counts devices one by one (a device
        partly held, now or in the snapshot, or listed by the state), `_UNKNOWN` there
        until asked, `_WHOLE` elsewhere. Kept per part of a device and brought up to
        date from the nodes listed or moved since (`_listed`): the shapes of a cycle ask
        a few parts between them."""
        found = self._rooms_of.get(milli)
        changed: Iterable[int]
        if found is None:
            found = self._rooms_of[milli] = _Rooms([_WHOLE] * len(self.index.nodes))
            changed = self._used.keys() | self.index.shared_nodes
        else:
            changed = self._listed[found.seen :]
        rooms = found.per_node
        for node in changed:
            rooms[node] = _UNKNOWN
        found.seen = len(self._listed)
        return rooms

    def column(self, name: str) -> list[int]:
        """Free amount of one resource on every node, kept current by `_change`: each new
        shape's fit counts read columns instead of every node's dict. Its figures are
        new int objects (`+ 0`), made one after the other, so a scan of the column reads
        memory in order: the nodes' own are made as their pods come and go, cycle after
        cycle in the simulator, and lie scattered over the heap (the scans of a seed-3
        Alibaba run took up to a tenth less CPU so)."""
        column = self._columns.get(name)
        if column is None:
            column = self._columns[name] = [free.get(name, 0) + 0 for free in self.free]
        return column

    def _move_devices(self, node: int, pod: PodInfo, sign: int) -> None:
        """Take (sign -1) or give back the pod's devices. A running pod taken off (a
        preemption trial) and put back gets the devices it held; a device a fraction
        starts or stops using leaves or rejoins the node's whole free GPUs."""
        used = self.devices(node)
        self._spare.pop(node, None)
        self._slot_counts.pop(node, None)
        self._listed.append(node)
        before = used.count(0) if pod.fractional else 0
        if sign < 0:
            released = self._released.pop(pod.key, None)
            if released is not None and released[0] == node:
                shares = released[1]
                take(used, shares, 1)
            else:
                info = self.index.nodes[node]
                found = pod_shares(pod, info, used)  # takes what it finds
                if found is None:
                    found = overcommitted(pod, info, used)
                    take(used, found, 1)
                shares = found
            self.shares[pod.key] = shares
        else:
            shares = self.shares.pop(pod.key, ())
            if not shares:
                shares = self.index.device_usage(node).shares.get(pod.key, ())
            if pod.node_name is not None:  # a running pod: its devices are where it runs
                self._released[pod.key] = (node, shares)
            take(used, shares, -1)
        if pod.fractional:
            self._shared.add(node)
            change = (used.count(0) - before) * DEVICE
            if change:
                free = self.free[node]
                free[GPU] = free.get(GPU, 0) + change
                column = self._columns.get(GPU)
                if column is not None:
                    column[node] = free[GPU]
