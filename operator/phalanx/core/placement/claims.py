"""The devices of each placed gang's claims, decided once the gang has its nodes.

Placement counted DRA devices as resource columns (`snapshot/claims.py`); here the exact
allocator picks the devices, pod by pod on the pod's node, for every claim not allocated
yet: a claim shared by pods is allocated once (with the first of them), and one already
allocated must be reachable from the node. A gang is all or nothing here too: if any pod's
claims cannot be allocated on its node, none of the gang's bindings stand, its claims
keep no device, and it waits with the claim and the reason named. No device is ever given
twice: every allocated device, and each one given earlier in the cycle, is taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from phalanx.core.dra.allocate import ClaimProblem, DeviceMatcher, allocate
from phalanx.core.model.dra import Claim, ClaimAllocation, DeviceKey, DraInventory
from phalanx.core.model.inputs import NodeInfo
from phalanx.core.model.names import GroupKey
from phalanx.core.model.result import Binding
from phalanx.core.snapshot.claims import DeviceReach, pod_claim_objects


@dataclass(slots=True)
class PlacedClaims:
    """The bindings that stand, with their claims' allocations, and the gangs refused
    (group -> why)."""

    bindings: list[Binding] = field(default_factory=list)
    refused: dict[GroupKey, str] = field(default_factory=dict)


@dataclass(slots=True)
class _Pass:
    inventory: DraInventory
    nodes: dict[str, NodeInfo]
    reach: DeviceReach
    matcher: DeviceMatcher
    taken: set[DeviceKey]
    given: dict[str, ClaimAllocation] = field(default_factory=dict)  # claim -> this cycle's


def allocate_placed(
    inventory: DraInventory, nodes: Sequence[NodeInfo], bindings: Sequence[Binding]
) -> PlacedClaims:
    matcher = DeviceMatcher(inventory.classes)
    work = _Pass(
        inventory,
        {n.name: n for n in nodes},
        DeviceReach(inventory, matcher),
        matcher,
        {r.device for c in inventory.claims.values() if c.allocation for r in c.allocation},
    )
    result = PlacedClaims()
    for group, members in _by_group(bindings):
        checkpoint = (set(work.taken), dict(work.given))
        try:
            result.bindings.extend(_gang(work, members))
        except ClaimProblem as error:
            work.taken, work.given = checkpoint
            result.refused[group] = f"its claims cannot be allocated where it fits: {error}"
    return result


def _by_group(bindings: Sequence[Binding]) -> list[tuple[GroupKey, list[Binding]]]:
    groups: dict[GroupKey, list[Binding]] = {}
    for binding in bindings:
        groups.setdefault(binding.group, []).append(binding)
    return list(groups.items())


def _gang(work: _Pass, members: Sequence[Binding]) -> list[Binding]:
    return [_member(work, binding) for binding in members]


def _member(work: _Pass, binding: Binding) -> Binding:
    pod_key = str(binding.pod)
    if pod_key not in work.inventory.pod_claims:
        return binding
    # Its GPUs are its claims' devices, not device indices of the extended resource.
    binding = replace(binding, devices=())
    node = work.nodes[str(binding.node)]
    claims, problem = pod_claim_objects(work.inventory, pod_key)
    if problem:
        raise ClaimProblem(problem)
    reachable = work.reach.of(node)
    for claim in claims:
        _check_reach(work, claim, {d.key for d in reachable}, node.name)
    entries = [e.name for e in work.inventory.pod_claims[pod_key]]
    fresh = [
        (entry, c)
        for entry, c in zip(entries, claims, strict=True)
        if c.allocation is None and c.key not in work.given
    ]
    if not fresh:
        return binding
    allocations = allocate([c for _, c in fresh], reachable, work.taken, work.matcher)
    for allocation in allocations:
        work.given[allocation.claim] = allocation
        work.taken.update(result.device for result in allocation.results)
    named = tuple(
        replace(allocation, claim=claim.key if claim.made else "", entry=entry)
        for allocation, (entry, claim) in zip(allocations, fresh, strict=True)
    )
    return replace(binding, claims=named)


def _check_reach(work: _Pass, claim: Claim, reachable: set[DeviceKey], node: str) -> None:
    """A claim allocated already (earlier, or this cycle with another pod) only works on
    a node that reaches every device it holds."""
    given = work.given.get(claim.key)
    results = claim.allocation if claim.allocation is not None else given.results if given else ()
    outside = [r.device for r in results if r.device not in reachable]
    if outside:
        raise ClaimProblem(
            f"claim {claim.name} is allocated to device {outside[0][2]} of pool "
            f"{outside[0][1]}, which node {node} cannot reach"
        )
