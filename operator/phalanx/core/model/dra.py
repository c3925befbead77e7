"""Dynamic Resource Allocation (`resource.k8s.io/v1`) as the core sees it.

Devices come from ResourceSlices; a pod asks for them through ResourceClaims (its own,
made from a template, or one shared with other pods). The words follow upstream's API:
a claim has requests; a request is `exactly` one device ask or `firstAvailable`, a
prioritised list of asks (here both are a `DeviceRequest` with one or more `DeviceAsk`
choices); a claim's `constraints` make the devices of some requests agree on an
attribute. Attribute and capacity names are always fully qualified here
("gpu.nvidia.com/productName"): a slice's short names get the driver's domain, as
upstream's CEL environment gives them.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

from phalanx.core.model.inputs import NodeSelectorTerm, PodClaim
from phalanx.core.model.names import GPU

__all__ = ["PodClaim"]  # defined beside PodInfo, which carries it; named here too

DeviceKey = tuple[str, str, str]

NVIDIA_GPU_DRIVER = "gpu.nvidia.com"
"""The NVIDIA DRA Driver for GPUs: its driver name, which also names its DeviceClass."""

CLASS_RESOURCES: Mapping[str, str] = {NVIDIA_GPU_DRIVER: GPU}
"""Device classes whose devices also count as a resource, as Kueue's
`deviceClassMappings` do: a device of the NVIDIA driver's GPU class is one
`nvidia.com/gpu` for queue quotas, packing and the GPUs preemption weighs."""
"""(driver, pool, device name): a device's identity in an allocation result."""


@dataclass(frozen=True, slots=True)
class Semver:
    """A `version` attribute: compared as semantic versions (a pre-release sorts before
    its release; build metadata is not part of the order)."""

    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()

    def key(self) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]:
        """The order of semver 2.0: numbers, then no pre-release above any pre-release,
        numeric identifiers below alphanumeric ones."""
        pre = tuple((0, p) if isinstance(p, int) else (1, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre)


AttributeValue = bool | int | str | Semver


_CONTENT_IDS: dict[tuple[object, ...], int] = {}
_MAX_CONTENTS = 1 << 20


def content_id(content: tuple[object, ...]) -> int:
    """A number for a device's content, the same for equal content for as long as the
    table lives. The table is bounded: when full it starts over with numbers never used
    before, so an answer kept under an old number is never read for other content."""
    known = _CONTENT_IDS.get(content)
    if known is None:
        if len(_CONTENT_IDS) >= _MAX_CONTENTS:
            _CONTENT_IDS.clear()
        known = _CONTENT_IDS[content] = next(_NUMBERS)
    return known


_NUMBERS = itertools.count()


@dataclass(frozen=True, slots=True)
class Device:
    """One device of a ResourceSlice. `node`: the node it is on (a node-local slice);
    None for a pool that serves several nodes, then `node_terms` says which (empty with
    `all_nodes`). `capacity` is in milli-units, as every quantity in the core."""

    driver: str
    pool: str
    name: str
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    capacity: Mapping[str, int] = field(default_factory=dict)
    node: str | None = None
    node_terms: tuple[NodeSelectorTerm, ...] = ()
    all_nodes: bool = False
    # What a selector can see of the device, as a number: devices of equal content get
    # the same one (`content_id`), so the answers of selectors are kept by it across
    # snapshots (`dra/allocate.py`), where each snapshot's devices are new objects with,
    # mostly, the same content, and a lookup hashes an int, not the content.
    identity: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        seen = (
            self.driver,
            self.pool,
            self.name,
            tuple(sorted(self.attributes.items(), key=lambda item: item[0])),
            tuple(sorted(self.capacity.items())),
        )
        object.__setattr__(self, "identity", content_id(seen))

    @property
    def key(self) -> DeviceKey:
        return (self.driver, self.pool, self.name)


@dataclass(frozen=True, slots=True)
class DeviceClass:
    """A DeviceClass: the selectors every device of the class meets, and its config
    (handed to the driver with the allocation, untouched)."""

    name: str
    selectors: tuple[str, ...] = ()
    config: tuple[Mapping[str, object], ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceAsk:
    """One way to satisfy a request: `count` devices of `device_class` meeting every
    selector (CEL), or with `all_devices` every such device of the node's pools."""

    name: str
    device_class: str
    selectors: tuple[str, ...] = ()
    count: int = 1
    all_devices: bool = False


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """A claim's request: `choices[0]` for `exactly`; for `firstAvailable` the first
    choice that can be met wins (result names are then "request/choice")."""

    name: str
    choices: tuple[DeviceAsk, ...]
    first_available: bool = False

    def result_name(self, ask: DeviceAsk) -> str:
        return f"{self.name}/{ask.name}" if self.first_available else self.name


@dataclass(frozen=True, slots=True)
class MatchAttribute:
    """All devices allocated for `requests` (all of the claim's when empty) have the
    attribute, with one value."""

    attribute: str
    requests: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AllocatedDevice:
    request: str
    device: DeviceKey


@dataclass(frozen=True, slots=True)
class ClaimAllocation:
    """Devices allocated to one claim ("NS/NAME") for a pod's binding; `node` when any is
    local to a node (the allocation's node selector then names it). `entry`: the pod's
    `spec.resourceClaims` entry it is for; a claim from a template that
    kube-controller-manager has not made yet has `claim` "" (the writer finds its name
    in the pod's status under `entry`, and binds only once it is there)."""

    claim: str
    results: tuple[AllocatedDevice, ...]
    node: str | None
    entry: str = ""


@dataclass(frozen=True, slots=True)
class ClaimSpec:
    """What a claim (or the template it is made from) asks for."""

    requests: tuple[DeviceRequest, ...]
    constraints: tuple[MatchAttribute, ...] = ()
    config: tuple[Mapping[str, object], ...] = ()


@dataclass(frozen=True, slots=True)
class Claim:
    """A ResourceClaim: its spec, its allocation when it has one (`node` set when the
    allocated devices are local to one node) and the pods it is reserved for. `made`:
    False for the claim a template will give a pod, before kube-controller-manager has
    created it (its name is then only a stand-in)."""

    namespace: str
    name: str
    spec: ClaimSpec
    allocation: tuple[AllocatedDevice, ...] | None = None
    node: str | None = None
    reserved_for: tuple[str, ...] = ()
    made: bool = True

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class DraInventory:
    """Every DRA object a cycle reads: devices of complete pools, classes, claims and
    templates (by "NS/NAME"), and the claims of each pod that has any (its
    `PodInfo.claims`, gathered by `parse.objects.assemble_snapshot`)."""

    devices: tuple[Device, ...] = ()
    classes: Mapping[str, DeviceClass] = field(default_factory=dict)
    claims: Mapping[str, Claim] = field(default_factory=dict)
    templates: Mapping[str, ClaimSpec] = field(default_factory=dict)
    pod_claims: Mapping[str, tuple[PodClaim, ...]] = field(default_factory=dict)
    class_resources: Mapping[str, str] = field(default_factory=lambda: dict(CLASS_RESOURCES))
    # Set by the snapshot once its nodes and pods carry the DRA columns (`lowered`), with
    # each column in words (`columns`): a snapshot made again from them lowers nothing twice.
    lowered: bool = False
    columns: Mapping[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.pod_claims


NVIDIA_GPU_CLASS = DeviceClass(NVIDIA_GPU_DRIVER, (f'device.driver == "{NVIDIA_GPU_DRIVER}"',))
"""The DeviceClass the driver's chart installs: every device of the driver."""
