"""Kubernetes' own PodGroup (`scheduling.k8s.io`, the Workload API) -> GroupInfo.

Read in whichever version the API server serves: v1beta1 (and v1alpha3) on Kubernetes 1.37,
v1alpha2 on 1.36; the fields below mean the same in each, and the core never sees a version.
`schedulingPolicy.gang.minCount` is the gang's minMember; `basic` means independent pods
(a group of minMember 1: each pod placed on its own, yet inside the required domain);
`schedulingConstraints.topology[0].key` is a node label key, the level the gang must stay
within. `priority` and `preemptionPolicy` are the group's own (they win over its
PriorityClass); `disruptionMode` says whether a running group loses pods one at a time
(`single`; 1.36's "Pod") or only all together (`all`; 1.36's "PodGroup"); `resourceClaims`
are DRA claims shared by every pod of the group (parse/group_claims.py). What that API
cannot say (queue, preferred level, sub-groups, a schedule timeout, a runtime limit)
comes from Phalanx's annotations on the same object. A child of a CompositePodGroup names it
(`parentCompositePodGroupName`) and is folded into it (`composite`). A spec field Phalanx
does not act on is named in an InvalidSpec condition rather than dropped unseen.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.core.model.inputs import (
    DISRUPT_ALL,
    DISRUPT_SINGLE,
    PREEMPT_LOWER_PRIORITY,
    PREEMPT_NEVER,
    GroupInfo,
    GroupTopology,
    PodClaim,
)
from phalanx.core.model.names import (
    DEFAULT_QUEUE,
    DEFAULT_TOPOLOGY,
    PREFERRED_ANNOTATION,
    QUEUE_KEY,
    REQUIRED_ANNOTATION,
    UPSTREAM_API_GROUP,
)
from phalanx.core.parse.annotations import (
    GroupAnnotations,
    annotation_field,
    read_group_annotations,
)
from phalanx.core.parse.fields import Reader
from phalanx.core.parse.nominated import read_nomination
from phalanx.core.parse.reported import read_phase, read_placed_nodes, read_ran_whole

_TOPOLOGY = "spec.schedulingConstraints.topology"
# Spec fields read below, or that only say where the group came from (its Workload).
_READ = frozenset({
    "schedulingPolicy", "schedulingConstraints", "priorityClassName", "priority",
    "preemptionPolicy", "disruptionMode", "workloadRef", "podGroupTemplateRef",
    "parentCompositePodGroupName", "resourceClaims",
})
# Fields of the API that Phalanx does not act on yet: a group using one waits, told why.
_NOT_YET: dict[str, str] = {}
_CLAIMS = "spec.resourceClaims"
_DISRUPTION = {"single": DISRUPT_SINGLE, "all": DISRUPT_ALL,  # v1beta1, v1alpha3
               "Pod": DISRUPT_SINGLE, "PodGroup": DISRUPT_ALL}  # v1alpha2


def is_upstream(obj: Mapping[str, Any]) -> bool:
    api_version = obj.get("apiVersion")
    return isinstance(api_version, str) and api_version.startswith(f"{UPSTREAM_API_GROUP}/")


def parse_upstream_pod_group(obj: Mapping[str, Any]) -> GroupInfo:
    reader = Reader("PodGroup", obj, namespaced=True)
    _check_fields(reader)
    annotations = read_group_annotations(reader)
    labels = reader.labels("metadata.labels")
    queue = reader.labels("metadata.annotations").get(QUEUE_KEY) or labels.get(QUEUE_KEY)
    return GroupInfo(
        namespace=reader.namespace,
        name=reader.name,
        min_member=_min_member(reader),
        queue=queue or DEFAULT_QUEUE,
        priority_class_name=(
            annotations.priority_class_name or reader.string("spec.priorityClassName") or None
        ),
        topology=_topology(reader, annotations),
        creation=reader.timestamp(),
        schedule_timeout_seconds=annotations.schedule_timeout_seconds,
        api_group=UPSTREAM_API_GROUP,
        nomination=read_nomination(reader),
        phase=read_phase(obj),
        placed_nodes=read_placed_nodes(obj),
        priority=reader.integer("spec.priority"),
        preemption_policy=_preemption_policy(reader),
        disruption=_disruption(reader),
        ran_whole=read_ran_whole(obj),
        parent=reader.string("spec.parentCompositePodGroupName") or None,
        checkpointed_at=annotations.checkpointed_at,
        checkpoint_interval_seconds=annotations.checkpoint_interval_seconds,
        runtime_limit_seconds=annotations.runtime_limit_seconds,
        claims=_claims(reader),
    )


def _check_fields(reader: Reader) -> None:
    for field in reader.mapping("spec"):
        if field in _NOT_YET:
            raise reader.error(f"spec.{field}", _NOT_YET[field])
        if field not in _READ:
            raise reader.error(f"spec.{field}", "Phalanx does not know this field")


def _claims(reader: Reader) -> tuple[PodClaim, ...]:
    """`spec.resourceClaims` (v1beta1, gate DRAWorkloadResourceClaims): claims shared by
    every pod of the group. Each names a ResourceClaim, or a template from which
    kube-controller-manager makes one claim for the group (its name then in the group's
    `status.resourceClaimStatuses`). A pod uses one by an entry of its own with the same
    name and source (parse/group_claims.py)."""
    made = {
        str(s.get("name")): s.get("resourceClaimName")
        for s in reader.items("status.resourceClaimStatuses")
        if isinstance(s, Mapping)
    }
    found: list[PodClaim] = []
    for i, entry in enumerate(reader.items(_CLAIMS)):
        path = f"{_CLAIMS}[{i}]"
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or not name:
            raise reader.error(f"{path}.name", "missing")
        if name in {c.name for c in found}:
            raise reader.error(f"{path}.name", f"{name!r} is named twice")
        direct, template = entry.get("resourceClaimName"), entry.get("resourceClaimTemplateName")
        if isinstance(direct, str) == isinstance(template, str):
            raise reader.error(path, "set exactly one of resourceClaimName and "
                                     "resourceClaimTemplateName")
        claim = direct if isinstance(direct, str) else made.get(name)
        found.append(PodClaim(
            name,
            f"{reader.namespace}/{claim}" if isinstance(claim, str) and claim else None,
            f"{reader.namespace}/{template}" if isinstance(template, str) else None,
            group=f"{reader.namespace}/{reader.name}",
        ))
    return tuple(found)


def _preemption_policy(reader: Reader) -> str | None:
    policy = reader.string("spec.preemptionPolicy")
    if policy not in (None, PREEMPT_NEVER, PREEMPT_LOWER_PRIORITY):
        wanted = f"{PREEMPT_NEVER} or {PREEMPT_LOWER_PRIORITY}"
        raise reader.error("spec.preemptionPolicy", f"expected {wanted}, got {policy!r}")
    return policy


def _disruption(reader: Reader) -> str | None:
    """`{single: {}}` / `{all: {}}` (v1beta1), or "Pod" / "PodGroup" (v1alpha2)."""
    mode = reader.get("spec.disruptionMode")
    if mode is None:
        return None
    names = [mode] if isinstance(mode, str) else list(mode) if isinstance(mode, Mapping) else []
    if len(names) != 1 or names[0] not in _DISRUPTION:
        raise reader.error("spec.disruptionMode", f"expected single or all, got {mode!r}")
    return _DISRUPTION[names[0]]


def _min_member(reader: Reader) -> int:
    policy = reader.mapping("spec.schedulingPolicy")
    if policy.get("gang") is not None:
        return reader.required_integer("spec.schedulingPolicy.gang.minCount", minimum=1)
    if policy.get("basic") is not None:
        return 1
    raise reader.error("spec.schedulingPolicy", "set basic or gang")


def _topology(reader: Reader, annotations: GroupAnnotations) -> GroupTopology | None:
    label = _required_label(reader)
    if label is None and not annotations.has_topology:
        return None
    if label is not None and (annotations.required or annotations.preferred):
        message = f"{_TOPOLOGY} already names the level; leave this annotation out"
        key = REQUIRED_ANNOTATION if annotations.required else PREFERRED_ANNOTATION
        raise reader.error(annotation_field(key), message)
    return GroupTopology(
        network_topology=annotations.network_topology or DEFAULT_TOPOLOGY,
        required=annotations.required,
        preferred=annotations.preferred,
        sub_group=annotations.sub_group,
        required_label=label,
    )


def _required_label(reader: Reader) -> str | None:
    constraints = reader.items(_TOPOLOGY)
    if not constraints:
        return None
    first = constraints[0]
    key = first.get("key") if isinstance(first, Mapping) else None
    if not isinstance(key, str) or not key:
        raise reader.error(f"{_TOPOLOGY}[0].key", "missing")
    return key
