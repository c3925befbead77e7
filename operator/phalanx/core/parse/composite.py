"""Kubernetes' CompositePodGroup (`scheduling.k8s.io/v1alpha3`, Kubernetes 1.37) -> one gang.

A CompositePodGroup nests PodGroups: each child PodGroup names it in
`spec.parentCompositePodGroupName`; the composite's `schedulingConstraints.topology` is
the level all its children share, each child's own the level that child stays within.
Phalanx places a composite as one gang of all its children's pods, all of them or none,
each child a sub-group inside its own level and every child inside the composite's level:
what Phalanx's own PodGroup says with `spec.topology.required` and `subGroup`, so both
APIs reach the same placement. The fold happens here, while parsing: the core sees one
group whose roles are the children, and the children's pods as its members.

What Phalanx cannot place yet is refused by name (an InvalidSpec condition on every pod's
group): children of different minCount or topology key, a gang `minGroupCount` below the
number of children, a `basic` composite, a composite inside another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.inputs import GroupInfo, GroupTopology, PodInfo, RoleSpec, SubGroupSpec
from phalanx.core.model.names import GroupKey, key_of
from phalanx.core.parse.upstream import parse_upstream_pod_group

KIND = "CompositePodGroup"


@dataclass(frozen=True, slots=True)
class CompositeGroup:
    """A CompositePodGroup as read: `gang` carries what the composite says of itself
    (queue, priority, its level); `min_groups` its gang's minGroupCount (None: basic)."""

    gang: GroupInfo
    min_groups: int | None
    nested: bool  # it names a parent composite of its own


def parse_composite_pod_group(obj: Mapping[str, Any]) -> CompositeGroup:
    spec = obj.get("spec")
    nested = isinstance(spec, Mapping) and spec.get("parentCompositePodGroupName") is not None
    body = dict(obj)
    if isinstance(spec, Mapping):  # read as a PodGroup, less what only composites have
        policy = spec.get("schedulingPolicy")
        inner = {k: v for k, v in spec.items() if k != "parentCompositePodGroupName"}
        if isinstance(policy, Mapping) and isinstance(policy.get("gang"), Mapping):
            inner["schedulingPolicy"] = {"basic": {}}
        body["spec"] = inner
    try:
        gang = parse_upstream_pod_group(body)
    except InvalidObject as error:
        raise InvalidObject(KIND, error.name, error.field, error.message) from None
    return CompositeGroup(gang, _min_groups(obj), nested)


def _min_groups(obj: Mapping[str, Any]) -> int | None:
    spec = obj.get("spec") or {}
    gang = (spec.get("schedulingPolicy") or {}).get("gang") if isinstance(spec, Mapping) else None
    if not isinstance(gang, Mapping):
        return None
    count = gang.get("minGroupCount")
    name = key_of(str((obj.get("metadata") or {}).get("namespace") or "default"),
                  str((obj.get("metadata") or {}).get("name")))
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise InvalidObject(KIND, name, "spec.schedulingPolicy.gang.minGroupCount",
                            f"expected an integer of at least 1, got {count!r}")
    return count


def fold_composites(
    groups: Sequence[GroupInfo], composites: Sequence[CompositeGroup], pods: Sequence[PodInfo]
) -> tuple[list[GroupInfo], list[PodInfo], list[InvalidObject]]:
    """Children folded into their composites: the groups without the children, with one
    gang per composite; the children's pods as members of it (their child's name as
    their role); and what cannot be placed, by name."""
    children: dict[GroupKey, list[GroupInfo]] = {}
    kept: list[GroupInfo] = []
    for group in groups:
        if group.parent is None:
            kept.append(group)
        else:
            children.setdefault(GroupKey(key_of(group.namespace, group.parent)), []).append(group)
    invalid: list[InvalidObject] = []
    roles: dict[GroupKey, GroupKey] = {}  # child -> composite
    for composite in composites:
        key = composite.gang.key
        family = sorted(children.pop(key, []), key=lambda g: g.name)
        if not family:
            continue  # no child yet: nothing to place
        problem = _refusal(composite, family)
        if problem is not None:
            field, message = problem
            invalid.append(InvalidObject(KIND, key, field, message))
            invalid.extend(_child_refused(child, composite.gang.name, message)
                           for child in family)
            continue
        kept.append(_gang(composite, family))
        roles.update({child.key: key for child in family})
    for key, orphans in children.items():
        message = f"its CompositePodGroup {key.split('/', 1)[1]} does not exist"
        invalid.extend(InvalidObject("PodGroup", child.key, "spec.parentCompositePodGroupName",
                                     message) for child in orphans)
    return kept, [_member(pod, roles) for pod in pods], invalid


def _refusal(composite: CompositeGroup, family: Sequence[GroupInfo]) -> tuple[str, str] | None:
    """(field, why) when Phalanx cannot place this composite as it is written."""
    if composite.nested:
        return "spec.parentCompositePodGroupName", "Phalanx places one level of composites"
    if composite.min_groups is None:
        return "spec.schedulingPolicy.basic", "Phalanx places a composite as a gang only"
    if composite.min_groups != len(family):
        return ("spec.schedulingPolicy.gang.minGroupCount",
                f"Phalanx places all children or none: {composite.min_groups} of "
                f"{len(family)} children is not supported yet")
    shapes = {(child.min_member, _label(child)) for child in family}
    if len(shapes) > 1:
        found = ", ".join(f"{c.name}: minCount {c.min_member}, key {_label(c)}" for c in family)
        return "children", f"every child needs the same minCount and topology key ({found})"
    return None


def _label(child: GroupInfo) -> str | None:
    return child.topology.required_label if child.topology is not None else None


def _child_refused(child: GroupInfo, parent: str, why: str) -> InvalidObject:
    return InvalidObject("PodGroup", child.key, "spec.parentCompositePodGroupName",
                         f"its CompositePodGroup {parent} cannot be placed: {why}")


def _gang(composite: CompositeGroup, family: Sequence[GroupInfo]) -> GroupInfo:
    size = family[0].min_member
    own = composite.gang.topology or GroupTopology()
    sub = SubGroupSpec(size=size, required="", required_label=_label(family[0]), by_role=True)
    return replace(
        composite.gang,
        min_member=size * len(family),
        roles=tuple(RoleSpec(child.name, size) for child in family),
        topology=replace(own, sub_group=sub) if sub.required_label else own,
    )


def _member(pod: PodInfo, roles: Mapping[GroupKey, GroupKey]) -> PodInfo:
    if pod.group is None:
        return pod
    composite = roles.get(GroupKey(key_of(pod.namespace, pod.group)))
    if composite is None:
        return pod
    return replace(pod, group=composite.split("/", 1)[1], role=pod.group)
