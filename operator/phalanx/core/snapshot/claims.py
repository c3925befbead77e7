"""DRA devices as resources the placement already counts.

Every kind of device a waiting pod asks for (a device class and the request's selectors,
an `exactly` request with a count) becomes a resource column,
`dra.phalanx.io/<class>[.<selectors' hash>]`: a node's allocatable is how many devices
of that kind it can reach that no claim of another node's pod holds, and a pod's request
is how many its claims take. With that, gang placement, topology, packing's fit counts
and preemption (an evicted pod gives its columns back) all count DRA devices with no
second code path. A device whose class counts as a resource (a GPU of the NVIDIA driver's
class counts as `nvidia.com/gpu`, `DraInventory.class_resources`, as Kueue's
deviceClassMappings) adds to that resource too, so queue quotas, fragmentation-aware
packing and the GPUs preemption weighs see DRA GPUs as GPUs. The columns are a count,
not an allocation: which devices each pod gets is decided once the gang is placed
(`placement/claims.py`, the exact allocator), which also covers what a count cannot say
(kinds that share devices, `matchAttribute`, `firstAvailable`, All) and refuses a gang
whose claims do not all fit there.

A pod whose claims are allocated takes, for each kind, the allocated devices of that
kind, so kinds that overlap stay exact for running pods. A claim shared by several pods
is counted on the first of them (by name) only. A snapshot lowers once: one made again
from its nodes and pods (`with_bindings`) keeps them (`DraInventory.lowered`).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from phalanx.core.dra.allocate import ClaimProblem, DeviceMatcher
from phalanx.core.model.dra import Claim, ClaimSpec, Device, DeviceAsk, DraInventory
from phalanx.core.model.inputs import NodeInfo, PodInfo
from phalanx.core.model.names import PodKey
from phalanx.core.snapshot.predicates import matches_term

DRA_PREFIX = "dra.phalanx.io/"
UNIT = 1000  # one device, in the core's milli-units


def column_of(ask: DeviceAsk) -> str:
    """The resource column of a kind of device."""
    if not ask.selectors:
        return f"{DRA_PREFIX}{ask.device_class}"
    digest = hashlib.sha1("\n".join(ask.selectors).encode()).hexdigest()[:8]
    return f"{DRA_PREFIX}{ask.device_class}.{digest}"


def kind_of(ask: DeviceAsk) -> DeviceAsk:
    """The ask without its name and count: what makes two asks the same kind."""
    return DeviceAsk("", ask.device_class, ask.selectors)


@dataclass(slots=True)
class DeviceReach:
    """Which devices each node can reach: its own slices' devices and the pools whose
    node selector takes it. Built once per snapshot."""

    inventory: DraInventory
    matcher: DeviceMatcher
    _local: dict[str, list[Device]] = field(default_factory=dict)
    _pools: list[Device] = field(default_factory=list)
    _by_node: dict[str, tuple[Device, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for device in self.inventory.devices:
            if device.node is not None:
                self._local.setdefault(device.node, []).append(device)
            else:
                self._pools.append(device)

    @property
    def pooled(self) -> Sequence[Device]:
        return self._pools

    def of(self, node: NodeInfo) -> tuple[Device, ...]:
        found = self._by_node.get(node.name)
        if found is None:
            pooled = [d for d in self._pools if d.all_nodes or _takes(d, node)]
            found = self._by_node[node.name] = (*self._local.get(node.name, ()), *pooled)
        return found


def _takes(device: Device, node: NodeInfo) -> bool:
    return any(matches_term(node, term) for term in device.node_terms)


def claim_of(inventory: DraInventory, pod_key: str, entry_name: str) -> Claim | None:
    """The claim a pod's entry uses: the ResourceClaim once it exists, else one made
    from its template's spec (what kube-controller-manager will create: one per pod, or
    one for the whole group when the entry is its Kubernetes PodGroup's)."""
    for entry in inventory.pod_claims.get(pod_key, ()):
        if entry.name != entry_name:
            continue
        if entry.claim is not None and entry.claim in inventory.claims:
            return inventory.claims[entry.claim]
        if entry.template is not None and entry.template in inventory.templates:
            namespace, owner = (entry.group or pod_key).split("/", 1)
            name = f"{owner}-{entry.name}"
            return Claim(namespace, name, inventory.templates[entry.template], made=False)
    return None


def pod_claim_objects(inventory: DraInventory, pod_key: str) -> tuple[list[Claim], str]:
    """The pod's ("NS/NAME") claims, and why it cannot be placed ("" when it can)."""
    claims: list[Claim] = []
    for entry in inventory.pod_claims.get(pod_key, ()):
        claim = claim_of(inventory, pod_key, entry.name)
        if claim is None:
            missing = entry.claim or entry.template or entry.name
            return [], f"resource claim {missing} (entry {entry.name}) does not exist"
        claims.append(claim)
    return claims, ""


@dataclass(frozen=True, slots=True)
class Lowered:
    """Nodes and pods with the DRA columns set, and each column in words (what a
    wait message says instead of the column's name)."""

    nodes: tuple[NodeInfo, ...]
    pods: tuple[PodInfo, ...]
    columns: Mapping[str, str]


def lower(
    nodes: Sequence[NodeInfo], pods: Sequence[PodInfo], inventory: DraInventory
) -> Lowered:
    """See the module's docstring."""
    matcher = DeviceMatcher(inventory.classes)
    reach = DeviceReach(inventory, matcher)
    claims_of = {
        pod.key: pod_claim_objects(inventory, pod.key)
        for pod in pods
        if pod.key in inventory.pod_claims
    }
    problems = _claim_problems(claims_of.values(), inventory.devices, matcher)
    kinds = _local_kinds(_kinds(claims_of.values(), problems), reach.pooled, matcher)
    counted = _counted_claims(pods, claims_of)
    by_key = {d.key: d for d in inventory.devices}
    classes = tuple((c.name, c.selectors) for c in inventory.classes.values())
    signature = (tuple(kinds.items()), tuple(inventory.class_resources.items()), classes)
    counting = _Counting(kinds, matcher, by_key, inventory.class_resources, signature)
    lowered_pods = tuple(
        _lower_pod(pod, claims_of.get(pod.key), problems, counted, counting) for pod in pods
    )
    gone = {d.key for d in _orphan_devices(inventory, pods, by_key)}
    lowered_nodes = tuple(_lower_node(n, reach, counting, gone) for n in nodes)
    columns = {column: describe(kind) for column, kind in kinds.items()}
    return Lowered(lowered_nodes, lowered_pods, columns)


def describe(kind: DeviceAsk) -> str:
    """A kind of device in words: "device(s) of class C where SELECTOR && ..."."""
    where = f" where {' && '.join(kind.selectors)}" if kind.selectors else ""
    return f"device(s) of class {kind.device_class}{where}"


def claims_in_words(inventory: DraInventory, pod_key: str) -> str:
    """What a pod's claims ask for, for a wait message: "claim C: request R needs N
    device(s) of class K where ...", one clause per request."""
    claims, problem = pod_claim_objects(inventory, pod_key)
    if problem:
        return problem
    return "; ".join(
        f"claim {claim.name}: request {request.name} needs "
        + " or ".join(_asked(ask) for ask in request.choices)
        for claim in claims
        for request in claim.spec.requests
    )


def _asked(ask: DeviceAsk) -> str:
    return f"{'all' if ask.all_devices else ask.count} {describe(ask)}"


def _claim_problems(
    found: Iterable[tuple[list[Claim], str]], devices: Sequence[Device], matcher: DeviceMatcher
) -> dict[str, str]:
    """Claims ("NS/NAME") that can never be allocated as written, and why: a class that
    does not exist, a selector that does not compile or errors on a device of its class
    (upstream's allocator fails the claim on such an error too). Each kind of ask is
    tried on the devices once, however many claims ask for it."""
    kind_problems: dict[DeviceAsk, str] = {}
    problems: dict[str, str] = {}
    for claims, _ in found:
        for claim in claims:
            if claim.key in problems or claim.allocation is not None:
                continue
            for request in claim.spec.requests:
                why = next(
                    (
                        problem
                        for ask in request.choices
                        if (problem := _kind_problem(kind_of(ask), devices, matcher, kind_problems))
                    ),
                    "",
                )
                if why:
                    problems[claim.key] = f"claim {claim.name}: request {request.name}: {why}"
                    break
    return problems


def _kind_problem(
    kind: DeviceAsk, devices: Sequence[Device], matcher: DeviceMatcher, known: dict[DeviceAsk, str]
) -> str:
    if kind not in known:
        device_class = matcher.classes.get(kind.device_class)
        contents = tuple(d.identity for d in devices)
        key = (kind, device_class.selectors if device_class else None, contents)
        problem = _KIND_PROBLEMS.get(key)
        if problem is None:
            problem = _try_kind(kind, devices, matcher)
            if len(_KIND_PROBLEMS) >= 1024:
                _KIND_PROBLEMS.clear()
            _KIND_PROBLEMS[key] = problem
        known[kind] = problem
    return known[kind]


# Whether a kind of ask can be tried on the cluster's devices, by the kind, its class's
# selectors and the devices' contents: a cycle whose devices did not change does not try
# every device again. Bounded; a pure function of its key.
_KIND_PROBLEMS: dict[tuple[object, ...], str] = {}


def _try_kind(kind: DeviceAsk, devices: Sequence[Device], matcher: DeviceMatcher) -> str:
    try:
        for device in devices:
            matcher.meets(device, kind)
    except ClaimProblem as error:
        return str(error)
    return ""


def _kinds(
    found: Iterable[tuple[list[Claim], str]], problems: Mapping[str, str]
) -> dict[str, DeviceAsk]:
    kinds: dict[str, DeviceAsk] = {}
    for claims, _ in found:
        for claim in claims:
            if claim.key in problems:
                continue
            for ask in _counted_asks(claim.spec):
                kinds.setdefault(column_of(ask), kind_of(ask))
    return dict(sorted(kinds.items()))


def _local_kinds(
    kinds: dict[str, DeviceAsk], pooled: Sequence[Device], matcher: DeviceMatcher
) -> dict[str, DeviceAsk]:
    """The kinds only node-local devices serve: a pool reachable from many nodes cannot be
    a per-node count (each node would count it whole), so such kinds are left to the
    exact allocator."""

    def local(kind: DeviceAsk) -> bool:
        try:
            return not any(matcher.meets(d, kind) for d in pooled)
        except ClaimProblem:
            return True

    return {column: kind for column, kind in kinds.items() if local(kind)}


def _counted_asks(spec: ClaimSpec) -> Iterable[DeviceAsk]:
    """Asks a count can stand for: `exactly` with ExactCount."""
    for request in spec.requests:
        ask = request.choices[0]
        if not request.first_available and not ask.all_devices:
            yield ask


def _counted_claims(
    pods: Sequence[PodInfo], claims_of: Mapping[PodKey, tuple[list[Claim], str]]
) -> set[tuple[str, str]]:
    """(pod, claim) pairs whose devices count on that pod: a shared claim on its first
    pod by name only."""
    first: dict[str, str] = {}
    for pod in sorted(pods, key=lambda p: p.key):
        for claim in claims_of.get(pod.key, ([], ""))[0]:
            first.setdefault(claim.key, pod.key)
    return {(pod_key, claim_key) for claim_key, pod_key in first.items()}


@dataclass(frozen=True, slots=True)
class _Counting:
    """What a pod's or node's devices are counted in: the kinds' columns, and the
    resource a device's class counts as (`DraInventory.class_resources`)."""

    kinds: Mapping[str, DeviceAsk]
    matcher: DeviceMatcher
    by_key: Mapping[tuple[str, str, str], Device]
    class_resources: Mapping[str, str]
    signature: tuple[object, ...] = ()  # what counts depend on besides the devices

    def resource_of(self, device: Device) -> str | None:
        """The resource the device counts as: that of the first mapped class it is in."""
        for device_class, resource in self.class_resources.items():
            if device_class in self.matcher.classes and self.matcher.meets(
                device, DeviceAsk("", device_class)
            ):
                return resource
        return None


def _lower_pod(
    pod: PodInfo,
    found: tuple[list[Claim], str] | None,
    problems: Mapping[str, str],
    counted: set[tuple[str, str]],
    counting: _Counting,
) -> PodInfo:
    if found is None:
        return pod
    claims, problem = found
    problem = problem or next((problems[c.key] for c in claims if c.key in problems), "")
    if problem:
        return replace(pod, invalid=pod.invalid or problem)
    demand: dict[str, int] = defaultdict(int)
    try:
        for claim in claims:
            if (pod.key, claim.key) in counted:
                _add_demand(demand, claim, counting)
    except ClaimProblem as error:
        return replace(pod, invalid=pod.invalid or str(error))
    requests = dict(pod.requests)
    for name, count in demand.items():
        requests[name] = requests.get(name, 0) + count * UNIT
    return replace(pod, requests=requests)


def _add_demand(demand: dict[str, int], claim: Claim, counting: _Counting) -> None:
    for name, count in _claim_demand(claim, counting).items():
        demand[name] += count


def _claim_demand(claim: Claim, counting: _Counting) -> Mapping[str, int]:
    """What one claim takes, per column and mapped resource: its asks' counts, or, once
    allocated, its devices counted in every column they are in. Kept by what decides it
    (the kinds and classes, the asks or the held devices' contents), as claims repeat
    from cycle to cycle."""
    key: tuple[object, ...]
    if claim.allocation is None:
        key = (counting.signature, tuple(_counted_asks(claim.spec)))
    else:
        held = (counting.by_key.get(r.device) for r in claim.allocation)
        contents = tuple(device.identity for device in held if device is not None)
        key = (counting.signature, "held", contents)
    known = _CLAIM_DEMAND.get(key)
    if known is None:
        known = _demand_of(claim, counting)
        if len(_CLAIM_DEMAND) >= 1 << 16:
            _CLAIM_DEMAND.clear()
        _CLAIM_DEMAND[key] = known
    return known


_CLAIM_DEMAND: dict[tuple[object, ...], Mapping[str, int]] = {}


def _demand_of(claim: Claim, counting: _Counting) -> Mapping[str, int]:
    demand: dict[str, int] = defaultdict(int)
    if claim.allocation is None:
        for ask in _counted_asks(claim.spec):
            demand[column_of(ask)] += ask.count
            resource = counting.class_resources.get(ask.device_class)
            if resource is not None:
                demand[resource] += ask.count
        return dict(demand)
    for result in claim.allocation:
        device = counting.by_key.get(result.device)
        if device is None:
            continue
        for column, kind in counting.kinds.items():
            if counting.matcher.meets(device, kind):
                demand[column] += 1
        resource = counting.resource_of(device)
        if resource is not None:
            demand[resource] += 1
    return dict(demand)


def _orphan_devices(
    inventory: DraInventory, pods: Sequence[PodInfo], by_key: Mapping[tuple[str, str, str], Device]
) -> list[Device]:
    """Allocated devices no bound pod of the snapshot accounts for (a claim allocated for
    a pod not bound yet, or kept by a pod that is gone): taken all the same."""
    bound_claims = {
        entry.claim
        for pod in pods
        if pod.node_name is not None
        for entry in inventory.pod_claims.get(pod.key, ())
        if entry.claim is not None
    }
    return [
        by_key[result.device]
        for claim in inventory.claims.values()
        if claim.allocation is not None and claim.key not in bound_claims
        for result in claim.allocation
        if result.device in by_key
    ]


def _lower_node(
    node: NodeInfo, reach: DeviceReach, counting: _Counting, gone: set[tuple[str, str, str]]
) -> NodeInfo:
    devices = [d for d in reach.of(node) if d.node is not None and d.key not in gone]
    if not devices:
        return node
    key = (id(node), counting.signature, tuple(d.identity for d in devices))
    known = _LOWERED_NODES.get(key)
    if known is not None and known[0] is node:
        return known[1]
    allocatable = dict(node.allocatable)
    for name, count in _node_columns(devices, counting).items():
        if count:
            allocatable[name] = allocatable.get(name, 0) + count * UNIT
    lowered = replace(node, allocatable=allocatable)
    if len(_LOWERED_NODES) >= _MAX_LOWERED_NODES:
        _LOWERED_NODES.clear()
    _LOWERED_NODES[key] = (node, lowered)
    return lowered


# Lowered nodes by the node object (kept alive here, so its id cannot be another's), the
# kinds and classes, and its devices' contents: a node whose object and devices did not
# change is not counted again next cycle (the operator's cache and the simulator keep a
# node's object while it is unchanged; at 847 nodes of 8 GPUs, counting them was most of
# a simulated cycle). Bounded; a pure function of its key.
_LOWERED_NODES: dict[tuple[object, ...], tuple[NodeInfo, NodeInfo]] = {}
_MAX_LOWERED_NODES = 1 << 16


def _node_columns(devices: Sequence[Device], counting: _Counting) -> dict[str, int]:
    columns: dict[str, int] = defaultdict(int)
    for column, kind in counting.kinds.items():
        try:
            columns[column] = sum(1 for d in devices if counting.matcher.meets(d, kind))
        except ClaimProblem:
            continue  # the pods asking for it are invalid and say why
    for device in devices:
        try:
            resource = counting.resource_of(device)
        except ClaimProblem:
            continue
        if resource is not None:
            columns[resource] += 1
    return dict(columns)
