"""Kubernetes objects (dicts, as the API server returns them) -> Snapshot."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from phalanx.core.model.backoff import Backoff
from phalanx.core.model.dra import CLASS_RESOURCES, Claim, DeviceClass, DraInventory
from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.inputs import (
    GroupInfo,
    NodeInfo,
    PodInfo,
    PriorityClassInfo,
    QueueInfo,
    TopologySpec,
)
from phalanx.core.model.names import API_GROUP, GroupKey
from phalanx.core.parse.composite import KIND as COMPOSITE
from phalanx.core.parse.composite import (
    CompositeGroup,
    fold_composites,
    parse_composite_pod_group,
)
from phalanx.core.parse.dra import (
    ClaimTemplate,
    SliceParts,
    complete_devices,
    parse_claim,
    parse_claim_template,
    parse_device_class,
    parse_slice,
)
from phalanx.core.parse.group import parse_pod_group
from phalanx.core.parse.group_claims import share_group_claims
from phalanx.core.parse.label_levels import resolve_label_levels
from phalanx.core.parse.membership import join_implied_groups
from phalanx.core.parse.node import parse_node
from phalanx.core.parse.pod import parse_pod
from phalanx.core.parse.queue import parse_queue
from phalanx.core.parse.topology import parse_network_topology, parse_priority_class
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.snapshot.picture import Snapshot

PARSERS: dict[str, Callable[[Mapping[str, Any]], object]] = {
    "ResourceSlice": parse_slice,
    "DeviceClass": parse_device_class,
    "ResourceClaim": parse_claim,
    "ResourceClaimTemplate": parse_claim_template,
    "Node": parse_node,
    "Pod": parse_pod,
    "PodGroup": parse_pod_group,
    COMPOSITE: parse_composite_pod_group,
    "Queue": parse_queue,
    "NetworkTopology": parse_network_topology,
    "PriorityClass": parse_priority_class,
}


Parser = Callable[[Mapping[str, Any]], object]


def parse_object(obj: Mapping[str, Any], parsers: Mapping[str, Parser] = PARSERS) -> object:
    """One object -> its core type; None for a kind the core does not read. Raises
    InvalidObject for an object it cannot read. The one way every caller parses: a
    snapshot of plain objects below, the operator's cache once per object version."""
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InvalidObject("object", _name_of(obj), "kind", "missing")
    parser = parsers.get(kind)
    if parser is None:
        if kind.endswith("List"):  # flatten() unpacks lists whose items are a list
            raise InvalidObject(kind, _name_of(obj), "items", "expected a list")
        return None
    return parser(obj)


def snapshot_from_objects(
    objects: Iterable[Mapping[str, Any]],
    strict: bool = False,
    backoffs: Mapping[GroupKey, Backoff] | None = None,
    eviction_refused: Iterable[str] = (),
) -> Snapshot:
    """Parse every known kind (other kinds are ignored; `kind: List` is unpacked).

    With `strict` the first invalid object raises InvalidObject; otherwise invalid
    objects are skipped and listed in `Snapshot.invalid`, so one bad object never
    stops a cycle. `backoffs` and `eviction_refused`: see `assemble_snapshot`.
    """
    parsed: list[object] = []
    invalid: list[InvalidObject] = []
    for obj in flatten(objects):
        try:
            parsed.append(parse_object(obj))
        except InvalidObject as error:
            if strict:
                raise
            invalid.append(error)
    return assemble_snapshot(parsed, invalid, backoffs, eviction_refused)


def assemble_snapshot(
    parsed: Iterable[object],
    invalid: Iterable[InvalidObject] = (),
    backoffs: Mapping[GroupKey, Backoff] | None = None,
    eviction_refused: Iterable[str] = (),
    partial_since: Mapping[GroupKey, float] | None = None,
    previous: ClusterIndex | None = None,
    class_resources: Mapping[str, str] | None = None,
) -> Snapshot:
    """Parsed objects (any order, None skipped) -> Snapshot: levels named by node labels
    are resolved and workload pods join their groups. Nothing is parsed here, so a
    caller that keeps parsed objects between cycles (the operator) only assembles.
    `backoffs` are the groups' backoffs from the previous cycle's decisions (state the
    objects do not hold); `eviction_refused` are the pods whose eviction the API server
    refused lately (a PodDisruptionBudget), which the objects do not show either;
    `partial_since`, when each partly placed gang was first seen so (last decisions);
    `previous`, an earlier snapshot's index the new one may take unchanged parts from;
    `class_resources`, the DeviceClasses whose devices also count as a resource (the
    setting `dra.class_resources`; None: `CLASS_RESOURCES`).
    """
    by_type: dict[type, list[Any]] = {kind: [] for kind in _TYPES}
    for item in parsed:
        if item is not None:
            by_type[type(item)].append(item)
    invalid = list(invalid)
    folded, pods, refused = fold_composites(
        by_type[GroupInfo], by_type[CompositeGroup], by_type[PodInfo])
    invalid.extend(refused)
    groups, topologies = resolve_label_levels(_ours_first(folded), by_type[TopologySpec])
    known = {g.key for g in groups} | {
        GroupKey(e.name) for e in invalid if e.kind in ("PodGroup", COMPOSITE)}
    pods = join_implied_groups(pods, known)
    pods = share_group_claims(pods, groups)  # a Kubernetes PodGroup's shared claims
    return Snapshot(
        nodes=tuple(by_type[NodeInfo]),
        pods=tuple(pods),
        groups=groups,
        queues=tuple(by_type[QueueInfo]),
        topologies=topologies,
        priority_classes=tuple(by_type[PriorityClassInfo]),
        invalid=tuple(sorted(invalid, key=str)),
        backoffs=backoffs or {},
        eviction_refused=frozenset(eviction_refused),
        partial_since=partial_since or {},
        dra=_dra(by_type, pods, class_resources),
        previous=previous,
    )


_TYPES = (
    NodeInfo, PodInfo, GroupInfo, QueueInfo, TopologySpec, PriorityClassInfo, CompositeGroup,
    SliceParts, DeviceClass, Claim, ClaimTemplate,
)


def _dra(
    by_type: Mapping[type, list[Any]],
    pods: Iterable[PodInfo],
    class_resources: Mapping[str, str] | None,
) -> DraInventory:
    """The DRA objects, and the claims of each pod that names any."""
    pod_claims = {str(pod.key): pod.claims for pod in pods if pod.claims}
    if not pod_claims:
        return DraInventory()  # nothing asks for a device: no lowering, no allocation
    return DraInventory(
        devices=complete_devices(by_type[SliceParts]),
        classes={c.name: c for c in by_type[DeviceClass]},
        claims={c.key: c for c in by_type[Claim]},
        templates={t.key: t.spec for t in by_type[ClaimTemplate]},
        pod_claims=pod_claims,
        class_resources=dict(CLASS_RESOURCES if class_resources is None else class_resources),
    )


def _ours_first(groups: list[GroupInfo]) -> list[GroupInfo]:
    """Phalanx's PodGroup before Kubernetes' one of the same name (the first one wins)."""
    return sorted(groups, key=lambda g: g.api_group != API_GROUP)


def flatten(objects: Iterable[Any]) -> Iterator[Mapping[str, Any]]:
    """Objects, with `kind: List` (and `*List`) items unpacked; non-objects skipped."""
    for obj in objects:
        if not isinstance(obj, Mapping):
            continue
        kind = obj.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and isinstance(obj.get("items"), list):
            item_kind = kind[: -len("List")]
            items = obj["items"]
            if item_kind:  # typed lists (PodList) may leave out each item's kind
                items = [_with_kind(item, item_kind) for item in items]
            yield from flatten(items)
        else:
            yield obj


def _with_kind(item: Any, kind: str) -> Any:
    if isinstance(item, Mapping) and "kind" not in item:
        return {**item, "kind": kind}
    return item


def _name_of(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return str(name) if name else "?"
