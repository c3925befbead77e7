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
    with the implicit ones those groups need added."""
    implicit: dict[str, TopologySpec] = {}
    resolved: list[GroupInfo] = []
    for group in groups:
        spec = group.topology
        if spec is None or not (spec.required_label or spec.preferred_label):
            resolved.append(group)
            continue
        label = spec.required_label or spec.preferred_label or ""
        found = _find_level(topologies, label, spec.network_topology)
        if found is None:
            name = implicit_topology_name(label)
            implicit.setdefault(name, TopologySpec(name, (TopologyLevel(label, (label,)),)))
            found = (name, label)
        resolved.append(replace(group, topology=_named(spec, *found)))
    extra = tuple(implicit[name] for name in sorted(implicit))
    return tuple(resolved), (*topologies, *extra)


def _named(spec: GroupTopology, topology: str, level: str) -> GroupTopology:
    required = level if spec.required_label else spec.required
    preferred = level if spec.preferred_label else spec.preferred
    return replace(
        spec,
        network_topology=topology,
        required=required,
        preferred=preferred,
        required_label=None,
        preferred_label=None,
    )


def _find_level(
    topologies: Sequence[TopologySpec], label: str, first: str
) -> tuple[str, str] | None:
    ordered = sorted(topologies, key=lambda t: (t.name != first, t.name))
    for topology in ordered:
        for level in topology.levels:
            if label in level.node_labels:
                return topology.name, level.name
    return None
