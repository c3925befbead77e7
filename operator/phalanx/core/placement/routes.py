"""Which topology a group uses and how far its pods may spread."""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.core.admission.members import GroupWork, Problem
from phalanx.core.model.config import SchedulerConfig
from phalanx.core.model.status import Reason, StatusCode
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.topology.spec import TopologySpec
from phalanx.topology.tree import ROOT_LEVEL


@dataclass(frozen=True, slots=True)
class Route:
    """`limit`: coarsest level index the gang may span (-1: whole cluster)."""

    topology: str | None
    limit: int = ROOT_LEVEL
    preferred: int | None = None
    sub_group: tuple[int, int] | None = None


FLAT = Route(topology=None)


def route_of(index: ClusterIndex, work: GroupWork, config: SchedulerConfig) -> Route | Problem:
    """No constraint: the default topology for best-effort locality (flat if none);
    a required or preferred level: that NetworkTopology, which must exist."""
    if not config.topology_aware:
        return FLAT
    spec = work.group.topology if work.group is not None else None
    if spec is None or not (spec.required or spec.preferred or spec.sub_group):
        name = spec.network_topology if spec is not None else config.default_topology
        return Route(topology=name) if name in index.topologies else FLAT
    topology = index.topologies.get(spec.network_topology)
    if topology is None:
        message = f"NetworkTopology {spec.network_topology} does not exist"
        return Problem(StatusCode.UNRESOLVABLE, Reason.TOPOLOGY_NOT_FOUND, message)
    levels: dict[str, int] = {}
    sub_level = spec.sub_group.required if spec.sub_group else None
    for level in (spec.required, spec.preferred, sub_level):
        if level is None:
            continue
        found = topology.level_index(level)
        if found is None:
            known = ", ".join(lv.name for lv in topology.levels)
            message = f"NetworkTopology {topology.name} has no level {level} (levels: {known})"
            return Problem(StatusCode.UNRESOLVABLE, Reason.LEVEL_NOT_FOUND, message)
        levels[level] = found
    for level in (spec.required, sub_level):
        if level is not None and (problem := _unlabelled(index, topology, levels[level])):
            return problem
    return Route(
        topology=topology.name,
        limit=levels[spec.required] if spec.required else ROOT_LEVEL,
        preferred=levels[spec.preferred] if spec.preferred else None,
        sub_group=(
            (spec.sub_group.size, levels[spec.sub_group.required]) if spec.sub_group else None
        ),
    )


def _unlabelled(index: ClusterIndex, topology: TopologySpec, level: int) -> Problem | None:
    """A required level that no node carries: every domain of it would be a stand-in for
    a missing label, so nothing can be placed "within one" of them; say so instead of
    reporting no room."""
    nodes = len(index.nodes)
    if not nodes or index.tree(topology.name).missing[level] < nodes:
        return None
    spec = topology.levels[level]
    message = (
        f"no node has a label of level {spec.name} of NetworkTopology {topology.name} "
        f"(nodeLabels: {', '.join(spec.node_labels)}), so no {spec.name} exists to "
        f"place the gang within"
    )
    return Problem(StatusCode.UNRESOLVABLE, Reason.LEVEL_UNLABELLED, message)
