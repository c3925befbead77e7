"""Nodes and NetworkTopology levels as the scheduler will read them.

A GPU node without a level's label is in no domain of that level, so a gang that requires
the level never lands there; a level whose label keys no node carries cannot hold any gang
that requires it (often a typo in the label key). Nodes and topologies are read with the
core's own parsers, so the check sees exactly what a cycle sees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.inputs import NodeInfo, TopologySpec
from phalanx.core.model.names import GPU
from phalanx.core.parse.node import parse_node
from phalanx.core.parse.topology import parse_network_topology
from phalanx.kubectl.checks import Check, Status, listed
from phalanx.topology.gaps import level_gaps
from phalanx.topology.tree import node_level_values

Obj = Mapping[str, Any]


def node_checks(nodes: Sequence[Obj]) -> tuple[list[Check], list[NodeInfo]]:
    """Findings on the nodes, and the nodes the core could read."""
    checks: list[Check] = []
    parsed: list[NodeInfo] = []
    for obj in nodes:
        try:
            parsed.append(parse_node(obj))
        except InvalidObject as error:
            checks.append(Check("nodes", _name(obj), Status.WARN, f"ignored by Phalanx: {error}"))
    gpu = [node for node in parsed if node.allocatable.get(GPU, 0) > 0]
    without = [node.name for node in parsed if node.allocatable.get(GPU, 0) <= 0]
    if gpu:
        total = sum(node.allocatable[GPU] for node in gpu) // 1000
        checks.append(Check("nodes", GPU, Status.OK, f"{len(gpu)} nodes, {total} GPUs"))
    else:
        checks.append(Check("nodes", GPU, Status.WARN, f"no node has {GPU}: nothing to place"))
    if without:
        checks.append(Check(
            "nodes", f"without {GPU}", Status.NOTE,
            f"{len(without)} nodes ({listed(without)}): only pods that ask for no GPU run there",
        ))
    return checks, parsed


def topology_checks(topologies: Sequence[Obj], nodes: Sequence[NodeInfo]) -> list[Check]:
    if not topologies:
        return [Check("topology", "NetworkTopology", Status.WARN,
                      "none: gangs cannot name a level (topology.required / preferred)")]
    checks: list[Check] = []
    for obj in topologies:
        try:
            spec = parse_network_topology(obj)
        except InvalidObject as error:
            checks.append(Check("topology", _name(obj), Status.FAIL, str(error)))
            continue
        checks.extend(_levels(spec, nodes))
    return checks


def _levels(spec: TopologySpec, nodes: Sequence[NodeInfo]) -> list[Check]:
    """A level no node carries fails; one that some GPU nodes lack warns (the operator's
    `Degraded` condition says the same, from the same `level_gaps`)."""
    gpu_nodes = [node for node in nodes if node.allocatable.get(GPU, 0) > 0]
    gaps = {gap.level: gap for gap in level_gaps(spec, [node.labels for node in gpu_nodes])}
    values, gpu_values = values_of(spec, nodes), values_of(spec, gpu_nodes)
    checks = []
    for index, level in enumerate(spec.levels):
        subject, keys = f"{spec.name}/{level.name}", ", ".join(level.node_labels)
        domains = {value[index] for value in values} - {None}
        gap = gaps.get(level.name)
        if not domains:
            checks.append(Check("topology", subject, Status.FAIL,
                                f"no node carries {keys}: no gang requiring {level.name} fits"))
        elif gap is not None:
            lacking = [n.name for n, v in zip(gpu_nodes, gpu_values, strict=True)
                       if v[index] is None]
            checks.append(Check(
                "topology", subject, Status.WARN,
                f"{gap.missing} of {gap.nodes} GPU nodes carry none of {keys} "
                f"({listed(lacking)}): gangs requiring {level.name} never use them",
            ))
        else:
            checks.append(Check("topology", subject, Status.OK,
                                f"{len(domains)} domains by {keys}"))
    return checks


def values_of(spec: TopologySpec, nodes: Sequence[NodeInfo]) -> list[tuple[str | None, ...]]:
    """Each node's domain at each level (None: it lacks the level's labels)."""
    return [node_level_values(spec, node.labels) for node in nodes]


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "(no name)")
