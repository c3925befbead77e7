"""Reading `resource.k8s.io/v1` objects: ResourceSlices, DeviceClasses, ResourceClaims,
ResourceClaimTemplates, and the claims a pod names.

A malformed object raises `InvalidObject` naming the field, like every parser here. Only
what allocation needs is read: partitionable devices (shared counters), consumable
capacity, admin access and device taints are not supported yet, and a request or device
that uses them is refused with that said rather than allocated wrongly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from phalanx.core.dra.values import semver_of
from phalanx.core.model.dra import (
    AllocatedDevice,
    AttributeValue,
    Claim,
    ClaimSpec,
    Device,
    DeviceAsk,
    DeviceClass,
    DeviceRequest,
    MatchAttribute,
)
from phalanx.core.model.quantity import MAX_INT32
from phalanx.core.parse.fields import Reader, is_mapping
from phalanx.core.parse.pod import node_selector_terms

_UNSUPPORTED_REQUEST = ("adminAccess", "capacity")
_UNSUPPORTED_DEVICE = ("consumesCounters", "allowMultipleAllocations")


@dataclass(frozen=True, slots=True)
class SliceParts:
    """One ResourceSlice: its pool (driver, name, generation, how many slices the pool
    has) and its devices. A pool's devices count once all its slices are seen."""

    driver: str
    pool: str
    generation: int
    count: int
    devices: tuple[Device, ...]


@dataclass(frozen=True, slots=True)
class ClaimTemplate:
    key: str  # "NS/NAME"
    spec: ClaimSpec


def parse_slice(obj: Mapping[str, Any]) -> SliceParts:
    reader = Reader("ResourceSlice", obj, namespaced=False)
    driver = _required(reader, "spec.driver")
    pool = _required(reader, "spec.pool.name")
    generation = reader.integer("spec.pool.generation", 0, minimum=0) or 0
    count = reader.integer("spec.pool.resourceSliceCount", 1, minimum=1) or 1
    node = reader.string("spec.nodeName")
    terms = (
        node_selector_terms(reader, "spec.nodeSelector.nodeSelectorTerms")
        if reader.get("spec.nodeSelector") is not None
        else ()
    )
    all_nodes = reader.boolean("spec.allNodes", False)
    if node is None and not terms and not all_nodes:
        raise reader.error("spec", "names no nodeName, nodeSelector or allNodes")
    devices = tuple(
        _device(reader, i, entry, driver, pool, node, terms, all_nodes)
        for i, entry in enumerate(reader.items("spec.devices"))
    )
    return SliceParts(driver, pool, generation, count, devices)


def _required(reader: Reader, path: str) -> str:
    value = reader.string(path)
    if not value:
        raise reader.error(path, "missing")
    return value


def _device(
    reader: Reader,
    index: int,
    entry: Any,
    driver: str,
    pool: str,
    node: str | None,
    terms: Any,
    all_nodes: bool,
) -> Device:
    path = f"spec.devices[{index}]"
    if not is_mapping(entry) or not isinstance(entry.get("name"), str):
        raise reader.error(f"{path}.name", "missing")
    for unsupported in _UNSUPPORTED_DEVICE:
        if entry.get(unsupported):
            raise reader.error(f"{path}.{unsupported}", "not supported by Phalanx yet")
    attributes = {
        _qualified(str(name), driver): _attribute(reader, f"{path}.attributes.{name}", value)
        for name, value in _object(reader, f"{path}.attributes", entry.get("attributes")).items()
    }
    capacity = {
        _qualified(str(name), driver): reader.resources(
            f"{path}.capacity", {name: _capacity_value(reader, f"{path}.capacity.{name}", value)}
        )[name]
        for name, value in _object(reader, f"{path}.capacity", entry.get("capacity")).items()
    }
    return Device(driver, pool, entry["name"], attributes, capacity, node, terms, all_nodes)


def _object(reader: Reader, path: str, value: Any) -> Mapping[str, Any]:
    """An optional object field: {} when absent, refused by path when not an object."""
    if value is None:
        return {}
    if not is_mapping(value):
        raise reader.error(path, "expected an object")
    return value


def _list(reader: Reader, path: str, value: Any) -> list[Any]:
    """An optional list field: [] when absent, refused by path when not a list."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise reader.error(path, "expected a list")
    return value


def _qualified(name: str, driver: str) -> str:
    """A short attribute name belongs to the driver's domain (upstream's rule)."""
    return name if "/" in name else f"{driver}/{name}"


def _capacity_value(reader: Reader, path: str, value: Any) -> Any:
    if not is_mapping(value) or "value" not in value:
        raise reader.error(f"{path}.value", "missing")
    return value["value"]


def _attribute(reader: Reader, path: str, value: Any) -> AttributeValue:
    """Exactly one of bool, int, string, version (upstream's DeviceAttribute)."""
    if not is_mapping(value) or len(value) != 1:
        raise reader.error(path, "needs exactly one of bool, int, string, version")
    kind, raw = next(iter(value.items()))
    if kind == "bool" and isinstance(raw, bool):
        return raw
    if kind == "int" and isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if kind == "string" and isinstance(raw, str):
        return raw
    if kind == "version" and isinstance(raw, str):
        version = semver_of(raw)
        if version is None:
            raise reader.error(f"{path}.version", f"not a semantic version: {raw!r}")
        return version
    raise reader.error(path, f"unsupported attribute {kind!r} = {raw!r}")


def complete_devices(slices: Iterable[SliceParts]) -> tuple[Device, ...]:
    """Devices of the pools whose every slice of the newest generation is here: a pool
    seen in part (a driver republishing it) is left out until it is whole, as upstream's
    allocator does, so a device never counts twice or from a stale generation."""
    slices = list(slices)
    newest: dict[tuple[str, str], int] = {}
    for part in slices:
        key = (part.driver, part.pool)
        newest[key] = max(part.generation, newest.get(key, part.generation))
    seen: dict[tuple[str, str], list[SliceParts]] = {}
    for part in slices:
        if part.generation == newest[(part.driver, part.pool)]:
            seen.setdefault((part.driver, part.pool), []).append(part)
    found: list[Device] = []
    for parts in seen.values():
        if all(part.count == len(parts) for part in parts):
            found.extend(device for part in parts for device in part.devices)
    return tuple(found)


def parse_device_class(obj: Mapping[str, Any]) -> DeviceClass:
    reader = Reader("DeviceClass", obj, namespaced=False)
    selectors = _selectors(reader, "spec.selectors")
    config = tuple(c for c in reader.items("spec.config") if is_mapping(c))
    return DeviceClass(reader.name, selectors, config)


def _selectors(reader: Reader, path: str, entries: Sequence[Any] | None = None) -> tuple[str, ...]:
    items = reader.items(path) if entries is None else entries
    found = []
    for i, entry in enumerate(items):
        cel = entry.get("cel") if is_mapping(entry) else None
        expression = cel.get("expression") if is_mapping(cel) else None
        if not isinstance(expression, str) or not expression.strip():
            raise reader.error(f"{path}[{i}].cel.expression", "missing")
        found.append(expression)
    return tuple(found)


def parse_claim_spec(reader: Reader, path: str) -> ClaimSpec:
    requests = tuple(
        _request(reader, f"{path}.devices.requests[{i}]", entry)
        for i, entry in enumerate(reader.items(f"{path}.devices.requests"))
    )
    names = [r.name for r in requests]
    if len(set(names)) != len(names):
        raise reader.error(f"{path}.devices.requests", "request names repeat")
    constraints = tuple(
        _constraint(reader, f"{path}.devices.constraints[{i}]", entry, names)
        for i, entry in enumerate(reader.items(f"{path}.devices.constraints"))
    )
    config = tuple(c for c in reader.items(f"{path}.devices.config") if is_mapping(c))
    return ClaimSpec(requests, constraints, config)


def _request(reader: Reader, path: str, entry: Any) -> DeviceRequest:
    if not is_mapping(entry) or not isinstance(entry.get("name"), str):
        raise reader.error(f"{path}.name", "missing")
    name = entry["name"]
    exactly, choices = entry.get("exactly"), entry.get("firstAvailable")
    if (exactly is None) == (choices is None):
        raise reader.error(path, "needs exactly one of exactly, firstAvailable")
    if exactly is not None:
        return DeviceRequest(name, (_ask(reader, f"{path}.exactly", exactly, name),))
    if not isinstance(choices, list) or not choices:
        raise reader.error(f"{path}.firstAvailable", "expected a non-empty list")
    asks = tuple(
        _ask(reader, f"{path}.firstAvailable[{i}]", c, None) for i, c in enumerate(choices)
    )
    return DeviceRequest(name, asks, first_available=True)


def _ask(reader: Reader, path: str, entry: Any, name: str | None) -> DeviceAsk:
    if not is_mapping(entry):
        raise reader.error(path, "expected an object")
    for unsupported in _UNSUPPORTED_REQUEST:
        if entry.get(unsupported):
            raise reader.error(f"{path}.{unsupported}", "not supported by Phalanx yet")
    own = name if name is not None else entry.get("name")
    if not isinstance(own, str) or not own:
        raise reader.error(f"{path}.name", "missing")
    device_class = entry.get("deviceClassName")
    if not isinstance(device_class, str) or not device_class:
        raise reader.error(f"{path}.deviceClassName", "missing")
    mode = entry.get("allocationMode", "ExactCount")
    if mode not in ("ExactCount", "All"):
        raise reader.error(f"{path}.allocationMode", f"must be ExactCount or All, got {mode!r}")
    count = entry.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_INT32:
        raise reader.error(f"{path}.count", f"must be a positive integer, got {count!r}")
    listed = _list(reader, f"{path}.selectors", entry.get("selectors"))
    selectors = _selectors(reader, f"{path}.selectors", listed)
    return DeviceAsk(own, device_class, selectors, count, all_devices=mode == "All")


def _constraint(reader: Reader, path: str, entry: Any, names: list[str]) -> MatchAttribute:
    attribute = entry.get("matchAttribute") if is_mapping(entry) else None
    if not isinstance(attribute, str) or "/" not in attribute:
        raise reader.error(f"{path}.matchAttribute", "needs a fully qualified attribute name")
    requests = tuple(str(r) for r in _list(reader, f"{path}.requests", entry.get("requests")))
    unknown = [r for r in requests if r not in names]
    if unknown:
        raise reader.error(f"{path}.requests", f"names no request of the claim: {unknown}")
    return MatchAttribute(attribute, requests)


def parse_claim(obj: Mapping[str, Any]) -> Claim:
    reader = Reader("ResourceClaim", obj, namespaced=True)
    spec = parse_claim_spec(reader, "spec")
    allocation = reader.get("status.allocation")
    results = None
    node = None
    if allocation is not None:
        results = tuple(
            _result(reader, f"status.allocation.devices.results[{i}]", entry)
            for i, entry in enumerate(reader.items("status.allocation.devices.results"))
        )
        node = _allocated_node(reader)
    reserved = tuple(
        str(ref.get("name"))
        for ref in reader.items("status.reservedFor")
        if is_mapping(ref) and ref.get("resource") == "pods"
    )
    return Claim(reader.namespace, reader.name, spec, results, node, reserved)


def _result(reader: Reader, path: str, entry: Any) -> AllocatedDevice:
    if not is_mapping(entry):
        raise reader.error(path, "expected an object")
    parts = [entry.get(k) for k in ("driver", "pool", "device")]
    if not all(isinstance(p, str) and p for p in parts):
        raise reader.error(path, "needs driver, pool and device")
    driver, pool, device = (str(p) for p in parts)
    return AllocatedDevice(str(entry.get("request", "")), (driver, pool, device))


def _allocated_node(reader: Reader) -> str | None:
    """The node an allocation is bound to, when its node selector names one by name."""
    for term in reader.items("status.allocation.nodeSelector.nodeSelectorTerms"):
        fields = term.get("matchFields") if is_mapping(term) else None
        for field in fields if isinstance(fields, list) else []:
            if not is_mapping(field):
                continue
            values = field.get("values")
            by_name = field.get("key") == "metadata.name"
            if by_name and isinstance(values, list) and len(values) == 1:
                return str(values[0])
    return None


def parse_claim_template(obj: Mapping[str, Any]) -> ClaimTemplate:
    reader = Reader("ResourceClaimTemplate", obj, namespaced=True)
    return ClaimTemplate(f"{reader.namespace}/{reader.name}", parse_claim_spec(reader, "spec.spec"))
