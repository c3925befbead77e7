"""Pod -> PodInfo, with the effective request Kubernetes schedules by.

Effective request per resource = max(sum of containers + sum of sidecars,
max over init containers of (that init container + sidecars started before it,
or for a sidecar, all sidecars up to and including it)) + pod overhead. A
container's limit stands in for a missing request, as API defaulting does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.core.model.inputs import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodClaim,
    PodInfo,
    Toleration,
)
from phalanx.core.model.names import ROLE_LABEL, group_name
from phalanx.core.parse.fields import Reader, is_mapping
from phalanx.core.parse.gpu_share import read_gpu_ask, read_gpu_index
from phalanx.core.parse.membership import implied_groups, implied_role
from phalanx.core.snapshot.resources import add, maximum, nonzero

_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
_AFFINITY = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


def parse_pod(obj: Mapping[str, Any]) -> PodInfo:
    reader = Reader("Pod", obj, namespaced=True)
    if not isinstance(reader.get("spec.containers"), list):
        raise reader.error("spec.containers", "missing")
    labels = reader.labels("metadata.labels")
    annotations = reader.labels("metadata.annotations")
    own = group_name(labels, annotations)
    # Kubernetes' own group (1.36+); from 1.37 the Job controller gives every Job's pods one
    # (basic unless the Job asks for a gang), so a workload's Phalanx gang, implied by its
    # labels, still wins where it exists (`membership.join_implied_groups`)
    group = own or reader.string("spec.schedulingGroup.podGroupName")
    requests = effective_requests(reader)
    ask = read_gpu_ask(annotations, requests)
    return PodInfo(
        namespace=reader.namespace,
        name=reader.name,
        requests=requests,
        node_name=reader.string("spec.nodeName") or None,
        phase=reader.string("status.phase", "Pending") or "Pending",
        scheduler_name=reader.string("spec.schedulerName", "default-scheduler") or "",
        group=group or None,
        role=labels.get(ROLE_LABEL) or (None if own else implied_role(labels)),
        node_selector=reader.labels("spec.nodeSelector"),
        affinity=_affinity(reader),
        tolerations=tuple(
            _toleration(reader, i, t) for i, t in enumerate(reader.items("spec.tolerations"))
        ),
        priority=reader.integer("spec.priority"),
        priority_class_name=reader.string("spec.priorityClassName"),
        creation=reader.timestamp(),
        scheduling_gates=_gates(reader),
        terminating=reader.get("metadata.deletionTimestamp") is not None,
        started_at=reader.moment("status.startTime"),
        implied_groups=() if own else implied_groups(labels),
        gpu_milli=ask.milli,
        gpu_memory=ask.memory,
        gpu_devices=read_gpu_index(annotations),
        invalid=ask.invalid,
        controlled=_controlled(reader.get("metadata.ownerReferences")),
        claims=_claims(reader) if reader.get("spec.resourceClaims") else (),
    )


def _claims(reader: Reader) -> tuple[PodClaim, ...]:
    """The pod's `spec.resourceClaims`, each with the claim it uses once that is known
    (a direct name, or the name kube-controller-manager wrote into the pod's status)."""
    made = {
        str(s.get("name")): s.get("resourceClaimName")
        for s in reader.items("status.resourceClaimStatuses")
        if is_mapping(s)
    }
    found = []
    for i, entry in enumerate(reader.items("spec.resourceClaims")):
        if not is_mapping(entry) or not isinstance(entry.get("name"), str):
            raise reader.error(f"spec.resourceClaims[{i}].name", "missing")
        name = entry["name"]
        direct, template = entry.get("resourceClaimName"), entry.get("resourceClaimTemplateName")
        claim = direct if isinstance(direct, str) else made.get(name)
        found.append(
            PodClaim(
                name,
                f"{reader.namespace}/{claim}" if isinstance(claim, str) else None,
                f"{reader.namespace}/{template}" if isinstance(template, str) else None,
            )
        )
    return tuple(found)


def _controlled(refs: Any) -> bool:
    """Has the pod a controller that recreates it (a Job, a ReplicaSet, ...)?"""
    return isinstance(refs, list) and any(
        is_mapping(ref) and bool(ref.get("controller")) for ref in refs
    )


def effective_requests(reader: Reader) -> dict[str, int]:
    total: dict[str, int] = {}
    for i, container in enumerate(reader.items("spec.containers")):
        total = add(total, _container_requests(reader, f"spec.containers[{i}]", container))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for i, container in enumerate(reader.items("spec.initContainers")):
        requests = _container_requests(reader, f"spec.initContainers[{i}]", container)
        if is_mapping(container) and container.get("restartPolicy") == "Always":
            total = add(total, requests)
            sidecars = add(sidecars, requests)
            init_peak = maximum(init_peak, sidecars)
        else:
            init_peak = maximum(init_peak, add(requests, sidecars))
    effective = maximum(total, init_peak)
    return nonzero(add(effective, reader.resources("spec.overhead")))


def _container_requests(reader: Reader, field: str, container: Any) -> dict[str, int]:
    if not is_mapping(container):
        raise reader.error(field, "expected an object")
    resources = container.get("resources") or {}
    if not is_mapping(resources):
        raise reader.error(f"{field}.resources", "expected an object")
    requests = _resource_map(reader, f"{field}.resources.requests", resources.get("requests"))
    limits = _resource_map(reader, f"{field}.resources.limits", resources.get("limits"))
    return {**limits, **requests}


def _resource_map(reader: Reader, field: str, value: Any) -> dict[str, int]:
    if value is None:
        return {}
    if not is_mapping(value):
        raise reader.error(field, "expected an object")
    return reader.resources(field, value)


def _affinity(reader: Reader) -> tuple[NodeSelectorTerm, ...]:
    return node_selector_terms(reader, f"{_AFFINITY}.nodeSelectorTerms")


def node_selector_terms(reader: Reader, path: str) -> tuple[NodeSelectorTerm, ...]:
    """A list of node selector terms at `path` (a pod's required affinity, a
    ResourceSlice's or an allocation's node selector)."""
    terms = reader.items(path)
    return tuple(_term(reader, f"{path}[{i}]", t) for i, t in enumerate(terms))


def _term(reader: Reader, field: str, term: Any) -> NodeSelectorTerm:
    if not is_mapping(term):
        raise reader.error(field, "expected an object")
    return NodeSelectorTerm(
        match_expressions=_requirements(
            reader, f"{field}.matchExpressions", term.get("matchExpressions")
        ),
        match_fields=_requirements(reader, f"{field}.matchFields", term.get("matchFields")),
    )


def _requirements(reader: Reader, field: str, value: Any) -> tuple[NodeSelectorRequirement, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise reader.error(field, "expected a list")
    found = []
    for i, item in enumerate(value):
        where = f"{field}[{i}]"
        if not is_mapping(item) or not isinstance(item.get("key"), str):
            raise reader.error(f"{where}.key", "missing")
        operator = item.get("operator")
        if operator not in _OPERATORS:
            raise reader.error(f"{where}.operator", f"unknown operator {operator!r}")
        values = item.get("values") or []
        if not isinstance(values, list):
            raise reader.error(f"{where}.values", "expected a list")
        found.append(NodeSelectorRequirement(item["key"], operator, tuple(str(v) for v in values)))
    return tuple(found)


def _toleration(reader: Reader, index: int, value: Any) -> Toleration:
    if not is_mapping(value):
        raise reader.error(f"spec.tolerations[{index}]", "expected an object")
    operator = value.get("operator") or "Equal"
    if operator not in ("Equal", "Exists"):
        raise reader.error(f"spec.tolerations[{index}].operator", f"unknown operator {operator!r}")
    return Toleration(
        key=str(value.get("key") or ""),
        operator=operator,
        value=str(value.get("value") or ""),
        effect=str(value.get("effect") or ""),
    )


def _gates(reader: Reader) -> tuple[str, ...]:
    gates = reader.items("spec.schedulingGates")
    return tuple(str(g.get("name")) for g in gates if is_mapping(g))
