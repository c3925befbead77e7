"""Kubernetes' own PodGroup (`scheduling.k8s.io/v1alpha2`, the Workload API) -> GroupInfo.

`schedulingPolicy.gang.minCount` is the gang's minMember; `basic` means independent pods
(a group of minMember 1: each pod placed on its own, yet inside the required domain);
`schedulingConstraints.topology[0].key` is a node label key, the level the gang must stay
within. What that API cannot say (queue, priority class, preferred level, sub-groups,
a schedule timeout) comes from Phalanx's annotations on the same object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.core.model.inputs import GroupInfo, GroupTopology
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
from phalanx.core.parse.reported import read_phase, read_placed_nodes

_TOPOLOGY = "spec.schedulingConstraints.topology"


def is_upstream(obj: Mapping[str, Any]) -> bool:
    api_version = obj.get("apiVersion")
    return isinstance(api_version, str) and api_version.startswith(f"{UPSTREAM_API_GROUP}/")


def parse_upstream_pod_group(obj: Mapping[str, Any]) -> GroupInfo:
    reader = Reader("PodGroup", obj, namespaced=True)
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
    )


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
