"""Properties of DRA allocation on random slices and claims, checked with the real CEL
evaluator: no device in two allocations, every device meets its class and selectors,
`matchAttribute` holds, a shared claim is allocated once, devices are on the pod's node,
and gangs stay whole."""

from __future__ import annotations

from collections import Counter

from core_builders import gang, node, pod
from dra_builders import A100, DRIVER, GPU_CLASS, H100, IS_H100, gpus, no_gpu_nodes
from hypothesis import given
from hypothesis import strategies as st

from phalanx.core.cycle import run_cycle
from phalanx.core.dra.cel import compiled
from phalanx.core.model.dra import (
    AllocatedDevice,
    Claim,
    ClaimSpec,
    DeviceAsk,
    DeviceRequest,
    DraInventory,
    MatchAttribute,
    PodClaim,
)
from phalanx.core.snapshot.picture import Snapshot

SELECTORS = ((), (IS_H100,), (f'device.attributes["{DRIVER}"].productName != "{H100}"',))
BIG = f'device.capacity["{DRIVER}"].memory.compareTo(quantity("64Gi")) >= 0'


@st.composite
def clusters(draw: st.DrawFn) -> Snapshot:
    node_count = draw(st.integers(1, 4))
    nodes = no_gpu_nodes([node(f"n{i}", gpus=0) for i in range(node_count)])
    devices = []
    for n in nodes:
        product = draw(st.sampled_from((H100, A100)))
        devices += gpus(n.name, draw(st.integers(1, 8)), product, 80 if product == H100 else 40)
    pods, groups, pod_claims, claims = [], [], {}, {}
    for g in range(draw(st.integers(1, 3))):
        size = draw(st.integers(1, 3))
        group, members = gang(f"g{g}", size, gpus=0)
        groups.append(group)
        pods += members
        spec = _spec(draw)
        shared = draw(st.booleans()) and size > 1
        if shared:
            claims[f"default/g{g}-shared"] = Claim("default", f"g{g}-shared", spec)
        for member in members:
            if shared:
                pod_claims[member.key] = (PodClaim("gpus", f"default/g{g}-shared"),)
            else:
                name = f"{member.name}-gpus"
                claims[f"default/{name}"] = Claim("default", name, spec)
                pod_claims[member.key] = (PodClaim("gpus", f"default/{name}"),)
    held = draw(st.integers(0, len(devices)))
    if held:  # a running pod on n0 holds some of n0's devices
        on_n0 = [d for d in devices if d.node == "n0"][:held]
        runner = pod("runner", gpus=0, node_name="n0")
        pods.append(runner)
        results = tuple(AllocatedDevice("gpus", d.key) for d in on_n0)
        claims["default/runner"] = Claim("default", "runner", _spec(draw), results, "n0")
        pod_claims[runner.key] = (PodClaim("gpus", "default/runner"),)
    dra = DraInventory(tuple(devices), {GPU_CLASS.name: GPU_CLASS}, claims, {}, pod_claims)
    return Snapshot(nodes=nodes, pods=pods, groups=groups, dra=dra)


def _spec(draw: st.DrawFn) -> ClaimSpec:
    selectors = draw(st.sampled_from(SELECTORS)) + draw(st.sampled_from(((), (BIG,))))
    ask = DeviceAsk("gpus", DRIVER, selectors, draw(st.integers(1, 4)))
    constraints = (MatchAttribute(f"{DRIVER}/pcieRoot"),) if draw(st.booleans()) else ()
    return ClaimSpec((DeviceRequest("gpus", (ask,)),), constraints)


@given(clusters())
def test_allocations_are_sound(snapshot: Snapshot) -> None:
    result = run_cycle(snapshot)
    dra = snapshot.dra
    devices = {d.key: d for d in dra.devices}
    before = [r.device for c in dra.claims.values() if c.allocation for r in c.allocation]
    given_now = [(b, a) for b in result.bindings for a in b.claims]
    after = [r.device for _, a in given_now for r in a.results]
    assert not [k for k, n in Counter(before + after).items() if n > 1], "a device given twice"
    assert len({a.claim for _, a in given_now}) == len(given_now), "a claim allocated twice"
    for binding, allocation in given_now:
        claim = dra.claims[allocation.claim]
        assert claim.allocation is None
        ask = claim.spec.requests[0].choices[0]
        assert len(allocation.results) == ask.count
        for r in allocation.results:
            device = devices[r.device]
            assert device.node == str(binding.node)
            expressions = (*GPU_CLASS.selectors, *ask.selectors)
            assert all(compiled(e).matches(device) for e in expressions)
        for constraint in claim.spec.constraints:
            held = [devices[r.device] for r in allocation.results]
            values = {device.attributes[constraint.attribute] for device in held}
            assert len(values) == 1
    bound_groups = Counter(str(b.group) for b in result.bindings)
    for group in snapshot.groups:
        assert bound_groups.get(group.key, 0) in (0, group.min_member)
    pods_of_shared = Counter(
        entry.claim for entries in dra.pod_claims.values() for entry in entries
    )
    for binding, allocation in given_now:
        if pods_of_shared[allocation.claim] > 1:
            sharers = [
                b for b in result.bindings
                if any(e.claim == allocation.claim for e in dra.pod_claims[str(b.pod)])
            ]
            assert {str(b.node) for b in sharers} == {str(binding.node)}
