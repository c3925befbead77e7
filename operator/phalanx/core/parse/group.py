"""PodGroup -> GroupInfo (also reads Volcano, scheduler-plugins and Kubernetes' own PodGroups)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.core.model.inputs import GroupInfo, GroupTopology, RoleSpec, SubGroupSpec
from phalanx.core.model.names import DEFAULT_QUEUE, DEFAULT_TOPOLOGY
from phalanx.core.parse.annotations import read_checkpointed_at
from phalanx.core.parse.fields import Reader
from phalanx.core.parse.nominated import read_nomination
from phalanx.core.parse.reported import read_phase, read_placed_nodes
from phalanx.core.parse.upstream import is_upstream, parse_upstream_pod_group


def parse_pod_group(obj: Mapping[str, Any]) -> GroupInfo:
    if is_upstream(obj):
        return parse_upstream_pod_group(obj)
    reader = Reader("PodGroup", obj, namespaced=True)
    min_member = reader.required_integer("spec.minMember", minimum=1)
    roles = _roles(reader)
    if sum(role.min_member for role in roles) > min_member:
        raise reader.error("spec.roles", f"role minima add up to more than minMember {min_member}")
    min_resources = reader.get("spec.minResources")
    return GroupInfo(
        namespace=reader.namespace,
        name=reader.name,
        min_member=min_member,
        queue=reader.string("spec.queue") or DEFAULT_QUEUE,
        priority_class_name=reader.string("spec.priorityClassName") or None,
        min_resources=reader.resources("spec.minResources") if min_resources is not None else None,
        roles=roles,
        topology=_topology(reader),
        creation=reader.timestamp(),
        schedule_timeout_seconds=reader.integer("spec.scheduleTimeoutSeconds", minimum=0),
        nomination=read_nomination(reader),
        phase=read_phase(obj),
        placed_nodes=read_placed_nodes(obj),
        checkpointed_at=read_checkpointed_at(reader),
        checkpoint_interval_seconds=reader.integer("spec.checkpointIntervalSeconds", minimum=1),
        runtime_limit_seconds=reader.integer("spec.runtimeLimitSeconds", minimum=1),
    )


def _roles(reader: Reader) -> tuple[RoleSpec, ...]:
    roles = []
    for i, role in enumerate(reader.items("spec.roles")):
        field = f"spec.roles[{i}]"
        if not isinstance(role, Mapping) or not isinstance(role.get("name"), str):
            raise reader.error(f"{field}.name", "missing")
        count = role.get("minMember")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            # the CRD's minimum: a role nobody must fill is no role (`phalanx plan -f`
            # reads files the API server never validated)
            raise reader.error(f"{field}.minMember", f"expected an integer >= 1, got {count!r}")
        roles.append(RoleSpec(role["name"], count))
    return tuple(roles)


def _topology(reader: Reader) -> GroupTopology | None:
    if reader.get("spec.topology") is None:
        return None
    required = reader.string("spec.topology.required") or None
    preferred = reader.string("spec.topology.preferred") or None
    required_label = reader.string("spec.topology.requiredNodeLabel") or None
    preferred_label = reader.string("spec.topology.preferredNodeLabel") or None
    if len([x for x in (required, preferred, required_label, preferred_label) if x]) > 1:
        message = "set one of required, preferred, requiredNodeLabel, preferredNodeLabel"
        raise reader.error("spec.topology", message)
    sub_group = None
    if reader.get("spec.topology.subGroup") is not None:
        level = reader.string("spec.topology.subGroup.required")
        if not level:
            raise reader.error("spec.topology.subGroup.required", "missing")
        size = reader.required_integer("spec.topology.subGroup.size", minimum=1)
        sub_group = SubGroupSpec(size=size, required=level)
    return GroupTopology(
        network_topology=reader.string("spec.topology.networkTopology") or DEFAULT_TOPOLOGY,
        required=required,
        preferred=preferred,
        sub_group=sub_group,
        required_label=required_label,
        preferred_label=preferred_label,
    )
