"""Cluster descriptions: a short YAML saying which GPU nodes exist and where they sit.

The loader is pure (no subprocess, no network; it only reads the description and, for
`source: lingjun`, the CSV it names), so the local control plane and the simulator build
the same nodes from the same file. Schema::

    name: small                    # used in node names and the NVLink clique ids
    layout:                        # a regular tree ...
      blocks: 2                    #   spine / aggregation domains
      racksPerBlock: 4             #   leaf switches (racks) per block
      nodesPerRack: 4
      nvlinkDomainNodes: 2         #   optional: nodes per multi-node NVLink domain
    # ... or the real network of a cluster:
    # source: lingjun
    # path: bench/data/lingjun-topology/topo.csv   # relative to the repository root
    node:                          # every node has this shape
      gpus: 8
      gpuProduct: NVIDIA-H100-80GB-HBM3
      gpuMemoryMiB: 81559
      cpu: 192
      memory: 2Ti
      pods: 110

Levels (coarse to fine) become the `default` NetworkTopology: block/rack[/nvlink]/host for a
layout, core/spine/leaf/host for lingjun.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from phalanx.cluster import labels
from phalanx.cluster.lingjun import read_lingjun_hosts
from phalanx.core.model.names import GROUP_VERSION

API_VERSION = GROUP_VERSION
SOURCES = ("lingjun",)


class DescriptionError(ValueError):
    """A description that cannot describe a cluster; the message names the key."""


@dataclass(frozen=True)
class NodeShape:
    """Capacity of one node; allocatable equals capacity (nothing is reserved)."""

    gpus: int = 8
    gpu_product: str = "NVIDIA-H100-80GB-HBM3"
    gpu_memory_mib: int = 81559
    cpu: str = "192"
    memory: str = "2Ti"
    pods: int = 110
    dra: bool = False  # GPUs as DRA devices (ResourceSlices, dra_slices.py), not nvidia.com/gpu


@dataclass(frozen=True)
class Level:
    """A NetworkTopology level: its name and the node label that names its domains."""

    name: str
    label: str


@dataclass(frozen=True)
class Host:
    """A node and the value of each topology label it carries (coarse to fine)."""

    name: str
    domains: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ClusterDescription:
    name: str
    shape: NodeShape
    levels: tuple[Level, ...]
    hosts: tuple[Host, ...]

    @property
    def gpus(self) -> int:
        return self.shape.gpus * len(self.hosts)


def load_description(path: str | Path) -> ClusterDescription:
    """Read a description file; relative data paths resolve against the repository root."""
    file = Path(path)
    try:
        data = yaml.safe_load(file.read_text())
    except FileNotFoundError as error:
        raise DescriptionError(f"cluster description {file} not found") from error
    if not isinstance(data, Mapping):
        raise DescriptionError(f"{file}: a cluster description is a mapping")
    return description_from_dict(data, repository_root(file.resolve().parent))


def repository_root(start: Path) -> Path:
    """The nearest ancestor holding pyproject.toml, else `start` itself."""
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file():
            return folder
    return start


def description_from_dict(data: Mapping[str, Any], root: Path = Path(".")) -> ClusterDescription:
    name = _string(data, "name", "cluster")
    shape = _shape(data.get("node") or {})
    source = data.get("source")
    if source is not None and "layout" in data:
        raise DescriptionError("give either layout or source, not both")
    if source is None:
        levels, hosts = _layout(name, _mapping(data, "layout"))
    elif source == "lingjun":
        levels, hosts = _lingjun(root / _string(data, "path", ""))
    else:
        raise DescriptionError(f"source: {source!r} is not one of {', '.join(SOURCES)}")
    return ClusterDescription(name=name, shape=shape, levels=levels, hosts=hosts)


def _layout(name: str, layout: Mapping[str, Any]) -> tuple[tuple[Level, ...], tuple[Host, ...]]:
    blocks = _positive(layout, "blocks", "layout")
    racks = _positive(layout, "racksPerBlock", "layout")
    per_rack = _positive(layout, "nodesPerRack", "layout")
    nvlink = layout.get("nvlinkDomainNodes")
    if nvlink is not None:
        nvlink = _positive(layout, "nvlinkDomainNodes", "layout")
        if per_rack % nvlink:
            raise DescriptionError("layout.nvlinkDomainNodes must divide layout.nodesPerRack")
    levels = [Level("block", labels.TOPOLOGY_SPINE), Level("rack", labels.TOPOLOGY_LEAF)]
    if nvlink:
        levels.append(Level("nvlink", labels.GPU_CLIQUE))
    levels.append(Level("host", labels.HOSTNAME))
    cluster_uuid = uuid.uuid5(uuid.NAMESPACE_DNS, f"{name}.clusters.phalanx.io")
    hosts: list[Host] = []
    for block in range(blocks):
        for rack in range(racks):
            for node in range(per_rack):
                domains = [
                    (labels.TOPOLOGY_SPINE, f"block-{block}"),
                    (labels.TOPOLOGY_LEAF, f"rack-{block}-{rack}"),
                ]
                if nvlink:
                    clique = ((block * racks + rack) * per_rack + node) // nvlink
                    domains.append((labels.GPU_CLIQUE, f"{cluster_uuid}.{clique}"))
                hosts.append(Host(f"gpu-b{block}-r{rack}-n{node}", tuple(domains)))
    return tuple(levels), tuple(hosts)


def _lingjun(path: Path) -> tuple[tuple[Level, ...], tuple[Host, ...]]:
    levels = (
        Level("core", labels.TOPOLOGY_CORE),
        Level("spine", labels.TOPOLOGY_SPINE),
        Level("leaf", labels.TOPOLOGY_LEAF),
        Level("host", labels.HOSTNAME),
    )
    hosts = tuple(
        Host(
            host.name,
            (
                (labels.TOPOLOGY_CORE, host.core),
                (labels.TOPOLOGY_SPINE, host.spine),
                (labels.TOPOLOGY_LEAF, host.leaf),
            ),
        )
        for host in read_lingjun_hosts(path)
    )
    return levels, hosts


def node_objects(description: ClusterDescription) -> list[dict[str, Any]]:
    """The Node objects to create, as the API server would return them (kwok-managed)."""
    return [node_object(description.shape, host) for host in description.hosts]


def node_object(shape: NodeShape, host: Host) -> dict[str, Any]:
    resources = {
        "cpu": shape.cpu,
        "memory": shape.memory,
        "pods": str(shape.pods),
    }
    if not shape.dra:  # a DRA node's GPUs are ResourceSlice devices only, as on a real one
        resources[labels.GPU_RESOURCE] = str(shape.gpus)
    node_labels = {
        labels.HOSTNAME: host.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        labels.KWOK_TYPE_LABEL: labels.KWOK_TYPE_VALUE,
        labels.GPU_PRESENT: "true",
        labels.GPU_COUNT: str(shape.gpus),
        labels.GPU_PRODUCT: shape.gpu_product,
        labels.GPU_MEMORY: str(shape.gpu_memory_mib),
        **dict(host.domains),
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": host.name,
            "labels": node_labels,
            "annotations": {
                labels.KWOK_NODE_ANNOTATION: labels.KWOK_NODE_VALUE,
                "node.alpha.kubernetes.io/ttl": "0",
            },
        },
        "spec": {},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux"},
        },
    }


def network_topology(description: ClusterDescription, name: str = "default") -> dict[str, Any]:
    """A NetworkTopology whose levels match the labels the description's nodes carry."""
    return {
        "apiVersion": API_VERSION,
        "kind": "NetworkTopology",
        "metadata": {"name": name},
        "spec": {
            "levels": [
                {"name": level.name, "nodeLabels": [level.label]} for level in description.levels
            ]
        },
    }


def _shape(node: Any) -> NodeShape:
    if not isinstance(node, Mapping):
        raise DescriptionError("node must be a mapping")
    default = NodeShape()
    return NodeShape(
        gpus=_non_negative(node, "gpus", "node", default.gpus),
        gpu_product=_string(node, "gpuProduct", default.gpu_product),
        gpu_memory_mib=_non_negative(node, "gpuMemoryMiB", "node", default.gpu_memory_mib),
        cpu=str(node.get("cpu", default.cpu)),
        memory=str(node.get("memory", default.memory)),
        pods=_positive(node, "pods", "node", default.pods),
        dra=_boolean(node, "dra", "node"),
    )


def _boolean(data: Mapping[str, Any], key: str, where: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise DescriptionError(f"{where}.{key} must be true or false, not {value!r}")
    return value


def _mapping(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    if not isinstance(value, Mapping):
        raise DescriptionError(f"{key} is required (a mapping) unless a source is given")
    return value


def _string(data: Mapping[str, Any], key: str, default: str) -> str:
    value = data.get(key, default)
    if not isinstance(value, str) or not value:
        raise DescriptionError(f"{key} must be a non-empty string")
    return value


def _positive(data: Mapping[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = _integer(data, key, where, default)
    if value < 1:
        raise DescriptionError(f"{where}.{key} must be at least 1, not {value}")
    return value


def _non_negative(data: Mapping[str, Any], key: str, where: str, default: int) -> int:
    value = _integer(data, key, where, default)
    if value < 0:
        raise DescriptionError(f"{where}.{key} must not be negative")
    return value


def _integer(data: Mapping[str, Any], key: str, where: str, default: int | None) -> int:
    value = data.get(key, default)
    if value is None:
        raise DescriptionError(f"{where}.{key} is required")
    if isinstance(value, bool) or not isinstance(value, int):
        raise DescriptionError(f"{where}.{key} must be an integer, not {value!r}")
    return value
