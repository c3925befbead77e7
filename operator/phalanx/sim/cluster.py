"""Simulated clusters from the shared cluster descriptions (`phalanx.cluster.description`).

The simulator builds its nodes from the very Node objects the local control
plane would create, so both see the same cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from phalanx.cluster import labels
from phalanx.cluster.description import (
    ClusterDescription,
    load_description,
    network_topology,
    node_objects,
)
from phalanx.sim.model import LevelKind, SimCluster, SimNode, TopologyLevel

_KIND_OF_LABEL = {
    labels.GPU_CLIQUE: LevelKind.NVLINK,
    labels.TOPOLOGY_LEAF: LevelKind.RACK,
    labels.TOPOLOGY_SPINE: LevelKind.BLOCK,
    labels.TOPOLOGY_CORE: LevelKind.CORE,
}
_BY_POSITION = (LevelKind.RACK, LevelKind.BLOCK, LevelKind.CORE)

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}
_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}


def cpu_milli(quantity: str) -> int:
    """Kubernetes cpu quantity ("192", "500m") in millicores."""
    text = str(quantity).strip()
    if text.endswith("m"):
        return int(float(text[:-1]))
    return round(float(text) * 1000)


def memory_mib(quantity: str) -> int:
    """Kubernetes memory quantity ("2Ti", "512Gi", "1e9") in MiB, rounded down."""
    text = str(quantity).strip()
    for suffix, factor in (*_BINARY.items(), *_DECIMAL.items()):
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * factor) // 2**20
    return int(float(text)) // 2**20


def load_cluster(path: str | Path) -> SimCluster:
    return cluster_from_description(load_description(path))


def cluster_from_description(description: ClusterDescription) -> SimCluster:
    objects = node_objects(description)
    topology = network_topology(description)
    return cluster_from_objects(description.name, objects, [topology])


def level_kinds(level_labels: Sequence[str]) -> tuple[LevelKind, ...]:
    """Kind of each non-host level (coarse to fine): by its label, else counting up from
    the finest level as rack, block, then core."""
    kinds: list[LevelKind] = []
    position = 0
    for label in reversed(level_labels):
        kind = _KIND_OF_LABEL.get(label) or _BY_POSITION[min(position, len(_BY_POSITION) - 1)]
        if kind is not LevelKind.NVLINK:
            position = _BY_POSITION.index(kind) + 1
        kinds.append(kind)
    return tuple(reversed(kinds))


def cluster_from_objects(
    name: str,
    nodes: Sequence[Mapping[str, Any]],
    topologies: Sequence[Mapping[str, Any]] = (),
) -> SimCluster:
    """Node objects (+ an optional NetworkTopology) -> a cluster with nodes sorted by name."""
    level_specs: list[tuple[str, str]] = []
    if topologies:
        for level in topologies[0]["spec"]["levels"]:
            label = level["nodeLabels"][0]
            if label != labels.HOSTNAME:
                level_specs.append((level["name"], label))
    kinds = level_kinds([label for _, label in level_specs])
    levels = tuple(
        TopologyLevel(name, label, kind)
        for (name, label), kind in zip(level_specs, kinds, strict=True)
    )
    sim_nodes = sorted((_node(obj, levels) for obj in nodes), key=lambda n: n.name)
    ordered_objects = sorted(nodes, key=lambda o: str(o["metadata"]["name"]))
    return SimCluster(
        name=name,
        nodes=tuple(sim_nodes),
        levels=levels,
        objects=(*ordered_objects, *topologies),
    )


def _node(obj: Mapping[str, Any], levels: Sequence[TopologyLevel]) -> SimNode:
    meta = obj["metadata"]
    node_labels: Mapping[str, str] = meta.get("labels") or {}
    alloc = obj["status"]["allocatable"]
    path: list[str] = []
    domains: list[str] = []
    for level in levels:
        value = node_labels.get(level.label, "")
        path.append(value)
        domains.append("/".join(path) if value else "")
    return SimNode(
        name=str(meta["name"]),
        gpus=int(alloc.get(labels.GPU_RESOURCE, 0)),
        cpu_milli=cpu_milli(alloc.get("cpu", "0")),
        memory_mib=memory_mib(alloc.get("memory", "0")),
        domains=tuple(domains),
        labels=dict(node_labels),
    )
