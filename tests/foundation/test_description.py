"""Cluster descriptions -> nodes and NetworkTopology (pure, no cluster needed)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import yaml

from crd_schema import validate
from phalanx.cluster import DescriptionError, load_description, network_topology, node_objects
from phalanx.cluster.description import description_from_dict
from phalanx.cluster.lingjun import LingjunDataMissing

REPO = Path(__file__).resolve().parents[2]
CLUSTERS = REPO / "examples" / "clusters"
SPINE = "network.topology.nvidia.com/spine"
LEAF = "network.topology.nvidia.com/leaf"
CORE = "network.topology.nvidia.com/core"
CLIQUE = "nvidia.com/gpu.clique"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


def labels_of(nodes: list[dict[str, object]], key: str) -> Counter[str]:
    return Counter(node["metadata"]["labels"][key] for node in nodes)  # type: ignore[index]


def test_small_cluster_is_two_blocks_of_four_racks_of_four_nodes() -> None:
    description = load_description(CLUSTERS / "small.yaml")
    nodes = node_objects(description)
    assert len(nodes) == 32 and description.gpus == 256
    assert sorted(labels_of(nodes, SPINE).values()) == [16, 16]
    assert sorted(labels_of(nodes, LEAF).values()) == [4] * 8
    assert sorted(labels_of(nodes, CLIQUE).values()) == [2] * 16
    assert [level.name for level in description.levels] == ["block", "rack", "nvlink", "host"]


def test_a_node_looks_like_a_gpu_node_with_feature_discovery() -> None:
    node = node_objects(load_description(CLUSTERS / "small.yaml"))[0]
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == node["metadata"]["name"]
    assert labels["nvidia.com/gpu.count"] == "8"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert labels["nvidia.com/gpu.memory"] == "81559"
    assert re.match(r"^[0-9a-f-]{36}\.[0-9]+$", labels[CLIQUE])
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert labels["type"] == "kwok"
    assert node["spec"] == {}  # no taints: pods need no toleration
    for field in ("capacity", "allocatable"):
        assert node["status"][field] == {
            "cpu": "192", "memory": "2Ti", "pods": "110", "nvidia.com/gpu": "8"
        }


def test_nvlink_domains_never_cross_racks() -> None:
    nodes = node_objects(load_description(CLUSTERS / "small.yaml"))
    racks_of_clique: dict[str, set[str]] = defaultdict(set)
    for node in nodes:
        labels = node["metadata"]["labels"]
        racks_of_clique[labels[CLIQUE]].add(labels[LEAF])
    assert all(len(racks) == 1 for racks in racks_of_clique.values())


def test_medium_cluster_has_64_nodes_and_no_nvlink_level() -> None:
    description = load_description(CLUSTERS / "medium.yaml")
    nodes = node_objects(description)
    assert len(nodes) == 64
    assert sorted(labels_of(nodes, LEAF).values()) == [8] * 8
    assert all(CLIQUE not in node["metadata"]["labels"] for node in nodes)
    assert [level.name for level in description.levels] == ["block", "rack", "host"]


def test_lingjun_is_847_hosts_under_three_switch_tiers() -> None:
    description = load_description(CLUSTERS / "lingjun.yaml")
    nodes = node_objects(description)
    assert len(nodes) == 847 and description.gpus == 847 * 8
    assert len(labels_of(nodes, CORE)) == 1
    assert len(labels_of(nodes, SPINE)) == 3
    assert len(labels_of(nodes, LEAF)) == 119
    names = [node["metadata"]["name"] for node in nodes]
    assert len(set(names)) == 847 and all(DNS_LABEL.match(name) for name in names)
    for node in nodes:
        assert all(LABEL_VALUE.match(value) and len(value) <= 63
                   for value in node["metadata"]["labels"].values())
    spine_of_leaf: dict[str, set[str]] = defaultdict(set)
    for node in nodes:
        labels = node["metadata"]["labels"]
        spine_of_leaf[labels[LEAF]].add(labels[SPINE])
    assert all(len(spines) == 1 for spines in spine_of_leaf.values())  # a tree


def test_lingjun_data_is_read_in_place_and_missing_data_says_where(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "lingjun.yaml").write_text("name: lj\nsource: lingjun\npath: nowhere/topo.csv\n")
    with pytest.raises(LingjunDataMissing, match=r"nowhere/topo\.csv"):
        load_description(tmp_path / "lingjun.yaml")


def test_network_topology_levels_follow_the_description() -> None:
    description = load_description(CLUSTERS / "lingjun.yaml")
    topology = network_topology(description)
    validate(topology)  # what the API server would accept
    assert [level["nodeLabels"] for level in topology["spec"]["levels"]] == [
        [CORE], [SPINE], [LEAF], ["kubernetes.io/hostname"]
    ]


def test_example_topology_is_the_small_cluster_topology() -> None:
    example = yaml.safe_load((REPO / "examples" / "topology.yaml").read_text())
    assert example == network_topology(load_description(CLUSTERS / "small.yaml"))


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"layout": {"blocks": 0, "racksPerBlock": 1, "nodesPerRack": 1}}, "layout.blocks"),
        ({"layout": {"blocks": 1, "racksPerBlock": 1, "nodesPerRack": 4,
                     "nvlinkDomainNodes": 3}}, "nvlinkDomainNodes"),
        ({"layout": {"blocks": 1, "racksPerBlock": "two", "nodesPerRack": 1}}, "racksPerBlock"),
        ({"source": "nowhere"}, "source"),
        ({}, "layout"),
        ({"layout": {"blocks": 1, "racksPerBlock": 1, "nodesPerRack": 1},
          "node": {"gpus": -1}}, "node.gpus"),
    ],
)
def test_bad_descriptions_name_the_key(data: dict[str, object], needle: str) -> None:
    with pytest.raises(DescriptionError, match=needle):
        description_from_dict(data)
