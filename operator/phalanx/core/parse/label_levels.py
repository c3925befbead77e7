"""Levels named by a node label key -> levels of a NetworkTopology.

Kubernetes' PodGroup (`topology[].key`) and Kueue (`podset-required-topology`) name a
topology level by the node label that defines it, not by a level name. Such a level is
the one of a NetworkTopology whose `nodeLabels` holds that key (the group's own
NetworkTopology first, then the others by name). If no NetworkTopology reads that label,
the group gets an implicit topology with that one level, so `topology.kubernetes.io/zone`
works on a cluster that declared no NetworkTopology at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from phalanx.core.model.inputs import GroupInfo, GroupTopology, TopologyLevel, TopologySpec

IMPLICIT_PREFIX = "node-label:"  # ':' cannot appear in a NetworkTopology's name


def implicit_topology_name(label: str) -> str:
    return f"{IMPLICIT_PREFIX}{label}"


def resolve_label_levels(
    groups: Sequence[GroupInfo], topologies: Sequence[TopologySpec]
) -> tuple[tuple[GroupInfo, ...], tuple[TopologySpec, ...]]:
    """The groups with label-named levels turned into level names, and the topologies
    with the implicit ones those groups need added. A group whose sub-groups also name
    their level by a label (a CompositePodGroup's children) needs both labels in one
    NetworkTopology, else an implicit one of the two levels, the group's first."""
    implicit: dict[str, TopologySpec] = {}
    resolved: list[GroupInfo] = []
    for group in groups:
        spec = group.topology
        labels = _labels(spec)
        if spec is None or not labels:
            resolved.append(group)
            continue
        found = _find_levels(topologies, labels, spec.network_topology)
        if found is None:
            name = implicit_topology_name(",".join(labels))
            levels = tuple(TopologyLevel(label, (label,)) for label in labels)
            implicit.setdefault(name, TopologySpec(name, levels))
            found = (name, labels)
        resolved.append(replace(group, topology=_named(spec, *found)))
    extra = tuple(implicit[name] for name in sorted(implicit))
    return tuple(resolved), (*topologies, *extra)


def _labels(spec: GroupTopology | None) -> tuple[str, ...]:
    """The node label keys naming the group's level, then its sub-groups' level."""
    if spec is None:
        return ()
    own = spec.required_label or spec.preferred_label
    sub = spec.sub_group.required_label if spec.sub_group is not None else None
    return tuple(label for label in (own, sub) if label)


def _named(spec: GroupTopology, topology: str, levels: Sequence[str]) -> GroupTopology:
    own = spec.required_label or spec.preferred_label
    level = levels[0] if own else None
    required = level if spec.required_label else spec.required
    preferred = level if spec.preferred_label else spec.preferred
    sub_group = spec.sub_group
    if sub_group is not None and sub_group.required_label:
        sub_group = replace(sub_group, required=levels[-1], required_label=None)
    return replace(
        spec,
        network_topology=topology,
        required=required,
        preferred=preferred,
        sub_group=sub_group,
        required_label=None,
        preferred_label=None,
    )


def _find_levels(
    topologies: Sequence[TopologySpec], labels: Sequence[str], first: str
) -> tuple[str, tuple[str, ...]] | None:
    """The first NetworkTopology (the group's own first, then by name) with a level
    reading each label, and those levels."""
    ordered = sorted(topologies, key=lambda t: (t.name != first, t.name))
    for topology in ordered:
        levels = [_level_reading(topology, label) for label in labels]
        if all(levels):
            return topology.name, tuple(level for level in levels if level)
    return None


def _level_reading(topology: TopologySpec, label: str) -> str | None:
    return next((lv.name for lv in topology.levels if label in lv.node_labels), None)
