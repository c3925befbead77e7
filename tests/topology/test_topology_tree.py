"""The static domain tree: paths, the missing-label rule, sharing between cycles."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

from core_builders import HOST, cycle, decision, gang, node, nodes_of, racks, topology

from phalanx.core.model.status import Reason, StatusCode
from phalanx.topology import TopologyLevel, TopologySpec, build_tree, tree_for
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


def test_a_required_level_no_node_carries_is_refused_with_the_reason() -> None:
    # Every node would be a singleton "rack": "within one rack" must not mean "one node".
    nodes = [
        node("lonely-1", gpus=8, labels={"block": "b0"}),
        node("lonely-2", gpus=8, labels={"block": "b0"}),
    ]
    small, small_pods = gang("small", 2, gpus=4, required="rack")
    loose, loose_pods = gang("loose", 2, gpus=4)
    result = cycle(nodes, SPEC, small, small_pods, loose, loose_pods)
    refused = decision(result, "default/small")
    assert refused.placed == 0 and refused.reason is Reason.LEVEL_UNLABELLED
    assert refused.code is StatusCode.UNRESOLVABLE
    assert "no node has a label of level rack" in refused.message
    assert "nodeLabels: rack" in refused.message
    assert decision(result, "default/loose").scheduled  # no required level: nodes still serve


def test_nodes_without_the_label_are_in_no_domain_of_a_required_level() -> None:
    nodes = [
        node("a", gpus=8, labels={"block": "b0", "rack": "r0"}),
        node("lonely-1", gpus=8, labels={"block": "b0"}),
        node("lonely-2", gpus=8, labels={"block": "b0"}),
    ]
    tree = tree_for(SPEC, [n.name for n in nodes], [n.labels for n in nodes])
    assert tree.missing == (0, 2, 0)  # per level: the nodes lacking its own label
    first, first_pods = gang("first", 2, gpus=4, required="rack")
    second, second_pods = gang("second", 2, gpus=4, required="rack")
    result = cycle(nodes, SPEC, first, first_pods, second, second_pods)
    assert nodes_of(result, "default/first") == ["a", "a"]  # the one real rack
    waiting = decision(result, "default/second")
    assert waiting.placed == 0 and waiting.reason is Reason.NO_DOMAIN_FITS
    assert "2 of 3 nodes have no rack label and are in no rack" in waiting.message


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


def test_levels_some_nodes_lack_are_named_with_counts() -> None:
    from phalanx.topology.gaps import gaps_message, level_gaps

    nodes = [
        node("a", labels={"block": "b0", "rack": "r0"}),
        node("b", labels={"block": "b0"}),
        node("c", labels={}),
    ]
    gaps = level_gaps(SPEC, [n.labels for n in nodes])
    assert [(g.level, g.missing, g.nodes) for g in gaps] == [("block", 1, 3), ("rack", 2, 3)]
    assert gaps_message(gaps).startswith(
        "level block: 1 of 3 nodes have none of its labels (block); "
        "level rack: 2 of 3 nodes have none of its labels (rack)")
    assert level_gaps(SPEC, [{}])[0].describe() == (
        "level block: no node has any of its labels (block)")
    assert level_gaps(SPEC, [n.labels for n in racks(1, 2)]) == () and gaps_message(()) == ""
