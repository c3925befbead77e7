"""The static domain tree: paths, the missing-label rule, sharing between cycles."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

from core_builders import HOST, cycle, decision, gang, node, pod, racks, topology

from phalanx.core import Snapshot
from phalanx.topology import TopologyLevel, TopologySpec, build_tree, tree_for
from phalanx.topology.summary import summarize_topology
from phalanx.topology.tree import ROOT, DomainTree, missing_label_marker

SPEC = topology("default", "block", "rack", "host")


def names_at(tree: DomainTree, level: str) -> list[str]:
    return [tree.name(d) for d in tree.by_level[tree.levels.index(level)]]


def test_domains_are_identified_by_their_whole_path() -> None:
    nodes = racks(1, 2, blocks=2)  # rack r0 under b0 and under b1
    tree = tree_for(SPEC, [n.name for n in nodes], [n.labels for n in nodes])
    assert names_at(tree, "rack") == ["b0/r0", "b1/r0"]
    assert len(tree.by_level[2]) == 4
    for i in range(len(nodes)):
        chain = tree.node_ancestors[i]
        assert chain[0] == ROOT and [tree.level_of[d] for d in chain] == [-1, 0, 1, 2]


def test_first_present_label_of_a_level_wins() -> None:
    spec = TopologySpec("t", (TopologyLevel("rack", ("leaf", "rack")),))
    labels = [{"leaf": "l1", "rack": "r9"}, {"rack": "r9"}]
    tree = tree_for(spec, ["a", "b"], labels)
    assert [tree.name(d) for d in tree.by_level[0]] == ["l1", "r9"]


def test_node_without_a_level_label_is_a_singleton_there_and_below() -> None:
    nodes = [
        node("a", labels={"block": "b0", "rack": "r0"}),
        node("b", labels={"block": "b0", "rack": "r0"}),
        node("lonely-1", labels={"block": "b0"}),
        node("lonely-2", labels={"block": "b0"}),
    ]
    tree = tree_for(SPEC, [n.name for n in nodes], [n.labels for n in nodes])
    racks_found = names_at(tree, "rack")
    assert racks_found == [
        f"b0/{missing_label_marker('lonely-1')}",
        f"b0/{missing_label_marker('lonely-2')}",
        "b0/r0",
    ]
    assert len(tree.by_level[0]) == 1  # they still share block b0


def test_unlabelled_node_hosts_a_gang_that_fits_on_it_alone_but_is_never_pooled() -> None:
    nodes = [
        node("lonely-1", gpus=8, labels={"block": "b0"}),
        node("lonely-2", gpus=8, labels={"block": "b0"}),
    ]
    small, small_pods = gang("small", 2, gpus=4, required="rack")
    big, big_pods = gang("big", 3, gpus=4, required="rack")
    result = cycle(nodes, SPEC, small, small_pods, big, big_pods)
    assert decision(result, "default/small").scheduled
    assert decision(result, "default/big").placed == 0


def test_the_tree_is_shared_while_labels_are_unchanged() -> None:
    nodes = racks(2, 2)
    names, labels = [n.name for n in nodes], [n.labels for n in nodes]
    first = tree_for(SPEC, names, labels)
    assert tree_for(SPEC, list(names), [dict(x) for x in labels]) is first
    moved = [dict(x) for x in labels]
    moved[0]["rack"] = "r1"
    assert tree_for(SPEC, names, moved) is not first


def test_domain_ids_do_not_depend_on_node_order() -> None:
    nodes = racks(2, 3, blocks=2)
    values = [tuple(n.labels.get(k) for k in ("block", "rack", HOST)) for n in nodes]
    forward = build_tree(SPEC, [n.name for n in nodes], values)
    assert forward.path == tuple(sorted(forward.path, key=lambda p: (len(p), p)))


def test_summary_counts_nodes_and_gpus_per_domain() -> None:
    nodes = racks(2, 2, gpus=8)
    busy = [pod("busy", gpus=3, node_name="n-0-1-0")]
    summary = summarize_topology(Snapshot(nodes=nodes, pods=busy, topologies=(SPEC,)), "default")
    rows = {row.name: row for row in summary.tree}
    assert (summary.levels, summary.nodes, summary.domains) == (3, 4, 1 + 2 + 4)
    assert (rows["b0"].nodes, rows["b0"].gpus, rows["b0"].free_gpus) == (4, 32, 29)
    assert (rows["b0/r1"].free_gpus, rows["b0/r1"].parent, rows["b0/r1"].label) == (13, "b0", "r1")
    assert rows["b0/r1/n-0-1-0"].free_gpus == 5 and rows["b0/r1/n-0-1-0"].level == "host"
