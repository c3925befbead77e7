"""Allocating a pod's claims on one node: which devices each request gets.

Upstream's structured allocator in Python, for the parts Phalanx supports: `exactly`
and `firstAvailable` requests, ExactCount and All, the class's and the request's
selectors, and `matchAttribute` constraints. A search with backtracking over the
requests of all the pod's unallocated claims, so one request never takes the device
another needed, bounded by `STEPS` (a claim too hard to solve in that is refused with
that said, never a hang). Already-allocated claims only have to be reachable from the
node. A device is never given twice: `taken` holds every allocated device.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field

from phalanx.core.dra.cel import SelectorError, compiled
from phalanx.core.model.dra import (
    AllocatedDevice,
    AttributeValue,
    Claim,
    ClaimAllocation,
    Device,
    DeviceAsk,
    DeviceClass,
    DeviceKey,
    DeviceRequest,
    MatchAttribute,
)

STEPS = 20_000  # devices tried per pod and node before the search gives up


class ClaimProblem(ValueError):
    """The claims cannot be allocated on this node; the message says which and why."""


@dataclass(slots=True)
class DeviceMatcher:
    """Whether devices meet asks, remembered per device and ask: a cycle asks the same
    pair on every node the gang is tried on."""

    classes: Mapping[str, DeviceClass]
    _seen: dict[tuple[int, str, tuple[str, ...]], bool] = field(default_factory=dict)

    def meets(self, device: Device, ask: DeviceAsk) -> bool:
        """Raises ClaimProblem for an unknown class or a selector that cannot be used."""
        key = (device.identity, ask.device_class, ask.selectors)
        known = self._seen.get(key)
        if known is None:
            known = self._seen[key] = self._meets(device, ask)
        return known

    def _meets(self, device: Device, ask: DeviceAsk) -> bool:
        device_class = self.classes.get(ask.device_class)
        if device_class is None:
            raise ClaimProblem(f"device class {ask.device_class} does not exist")
        expressions = (*device_class.selectors, *ask.selectors)
        key = (device.identity, expressions)
        known = _ANSWERS.get(key)
        if known is None:
            try:
                known = all(compiled(expression).matches(device) for expression in expressions)
            except SelectorError as error:
                raise ClaimProblem(str(error)) from None
            if len(_ANSWERS) >= _MAX_ANSWERS:
                _ANSWERS.clear()
            _ANSWERS[key] = known
        return known


# Selector answers by device content and expressions, kept across snapshots: a device's
# answer changes only when its slice changes what a selector can see. Bounded (cleared
# when full) so a long-running operator cannot grow it without end; a pure function of
# its key, so keeping it changes no decision.
_ANSWERS: dict[tuple[int, tuple[str, ...]], bool] = {}
_MAX_ANSWERS = 1 << 18


@dataclass(slots=True)
class _Slot:
    claim: int
    request: DeviceRequest


@dataclass(slots=True)
class _Search:
    claims: Sequence[Claim]
    devices: Sequence[Device]
    matcher: DeviceMatcher
    slots: list[_Slot]
    chosen: dict[DeviceKey, int] = field(default_factory=dict)  # device -> claim index
    picks: list[list[AllocatedDevice]] = field(default_factory=list)
    fixed: dict[tuple[int, int], AttributeValue] = field(default_factory=dict)
    steps: int = 0


def allocate(
    claims: Sequence[Claim],
    devices: Sequence[Device],
    taken: Set[DeviceKey],
    matcher: DeviceMatcher,
) -> tuple[ClaimAllocation, ...]:
    """Devices for every claim in `claims` (none allocated yet), out of `devices` (those
    reachable from one node: the caller knows the node) minus `taken`. Raises ClaimProblem."""
    free = [d for d in devices if d.key not in taken]
    slots = [_Slot(i, request) for i, claim in enumerate(claims) for request in claim.spec.requests]
    search = _Search(claims, free, matcher, slots, picks=[[] for _ in claims])
    if not _fill(search, 0):
        raise ClaimProblem(_why(search))
    return tuple(
        ClaimAllocation(claim.key, tuple(search.picks[i]), _node_of(search.picks[i], free))
        for i, claim in enumerate(claims)
    )


def _node_of(results: Sequence[AllocatedDevice], devices: Sequence[Device]) -> str | None:
    by_key = {d.key: d for d in devices}
    nodes = (by_key[result.device].node for result in results)
    return next((node for node in nodes if node is not None), None)


def _fill(search: _Search, index: int) -> bool:
    if index == len(search.slots):
        return True
    slot = search.slots[index]
    for ask in slot.request.choices:
        candidates = _candidates(search, slot, ask)
        if candidates is None:
            continue
        needed = len(candidates) if ask.all_devices else ask.count
        name = slot.request.result_name(ask)
        if _choose(search, index, slot, name, candidates, needed, 0):
            return True
    return False


def _candidates(search: _Search, slot: _Slot, ask: DeviceAsk) -> list[Device] | None:
    """Free devices meeting the ask; for All, None when any matching device is taken
    (upstream: All means every matching device, or nothing)."""
    matching = [d for d in search.devices if search.matcher.meets(d, ask)]
    if ask.all_devices:
        if not matching or any(d.key in search.chosen for d in matching):
            return None
        return matching
    return [d for d in matching if d.key not in search.chosen]


def _choose(
    search: _Search,
    index: int,
    slot: _Slot,
    name: str,
    candidates: list[Device],
    needed: int,
    start: int,
) -> bool:
    """Pick `needed` more devices for the slot from candidates[start:], then go on."""
    if needed == 0:
        return _fill(search, index + 1)
    for position in range(start, len(candidates) - needed + 1):
        search.steps += 1
        if search.steps > STEPS:
            return False
        device = candidates[position]
        undo = _take(search, slot, name, device)
        if undo is None:
            continue
        if _choose(search, index, slot, name, candidates, needed - 1, position + 1):
            return True
        _give_back(search, slot, device, undo)
    return False


def _take(
    search: _Search, slot: _Slot, name: str, device: Device
) -> list[tuple[int, int]] | None:
    """Add the device if the claim's constraints allow; the constraint values it fixed."""
    constraints = search.claims[slot.claim].spec.constraints
    fixed_now: list[tuple[int, int]] = []
    for number, constraint in enumerate(constraints):
        if not _applies(constraint, slot.request.name):
            continue
        value = device.attributes.get(constraint.attribute)
        if value is None:
            _unfix(search, fixed_now)
            return None
        key = (slot.claim, number)
        if key in search.fixed:
            if search.fixed[key] != value or type(search.fixed[key]) is not type(value):
                _unfix(search, fixed_now)
                return None
        else:
            search.fixed[key] = value
            fixed_now.append(key)
    search.chosen[device.key] = slot.claim
    search.picks[slot.claim].append(AllocatedDevice(name, device.key))
    return fixed_now


def _unfix(search: _Search, keys: list[tuple[int, int]]) -> None:
    for key in keys:
        del search.fixed[key]


def _give_back(search: _Search, slot: _Slot, device: Device, fixed: list[tuple[int, int]]) -> None:
    del search.chosen[device.key]
    search.picks[slot.claim].pop()
    _unfix(search, fixed)


def _applies(constraint: MatchAttribute, request: str) -> bool:
    return not constraint.requests or request in constraint.requests


def _why(search: _Search) -> str:
    """The first request that cannot be met on its own, else the combination."""
    if search.steps > STEPS:
        return f"no allocation found within {STEPS} tries"
    for slot in search.slots:
        claim = search.claims[slot.claim]
        for ask in slot.request.choices:
            matching = [d for d in search.devices if search.matcher.meets(d, ask)]
            needed = ask.count if not ask.all_devices else max(1, len(matching))
            if len(matching) < needed:
                return (
                    f"claim {claim.name}: request {slot.request.name} needs {needed} "
                    f"device(s) of class {ask.device_class}{_selected(ask)}, {len(matching)} free"
                )
    return "the claims' requests and constraints cannot all be met together"


def _selected(ask: DeviceAsk) -> str:
    return f" with {' && '.join(ask.selectors)}" if ask.selectors else ""
