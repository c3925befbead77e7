"""Node predicates: which nodes a pod may use, and the counted reason when not."""

from __future__ import annotations

from dataclasses import replace

import pytest
from core_builders import cycle, decision, node, nodes_of, pod

from phalanx.core.model.inputs import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Taint,
    Toleration,
)
from phalanx.core.snapshot.predicates import matches_requirement, tolerates


def req(operator: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement("k", operator, values)


@pytest.mark.parametrize(
    ("value", "requirement", "matches"),
    [
        ("a", req("In", "a", "b"), True),
        ("c", req("In", "a", "b"), False),
        (None, req("In", "a"), False),
        ("c", req("NotIn", "a"), True),
        ("a", req("NotIn", "a"), False),
        (None, req("NotIn", "a"), True),
        ("x", req("Exists"), True),
        (None, req("Exists"), False),
        (None, req("DoesNotExist"), True),
        ("x", req("DoesNotExist"), False),
        ("8", req("Gt", "4"), True),
        ("4", req("Gt", "4"), False),
        ("2", req("Lt", "4"), True),
        ("x", req("Gt", "4"), False),
        (None, req("Lt", "4"), False),
    ],
)
def test_requirement_operators(
    value: str | None, requirement: NodeSelectorRequirement, matches: bool
) -> None:
    assert matches_requirement(value, requirement) is matches


@pytest.mark.parametrize(
    ("value", "requirement", "matches"),
    [
        ("11", req("Gt", "+10"), True),  # a sign is part of an integer
        ("-3", req("Lt", "-2"), True),
        ("010", req("Gt", "9"), True),
        ("11", req("Gt", "1_0"), False),  # Python's int reads these three as 10
        ("11", req("Gt", " 10"), False),
        ("11", req("Gt", "\u0661\u0660"), False),
        ("1_1", req("Gt", "4"), False),  # a label value may be "1_1": no integer either
        (str(2**63), req("Gt", "0"), False),  # beyond int64
        ("0", req("Lt", str(2**63)), False),
        ("0", req("Gt", "-" + "9" * 5000), False),  # `int` raises on this many digits
        ("5", req("Gt", "4", "3"), False),  # one value, or no node
    ],
)
def test_gt_and_lt_read_integers_as_kubernetes_does(
    value: str, requirement: NodeSelectorRequirement, matches: bool
) -> None:
    """Go's strconv.ParseInt(s, 10, 64): kube-scheduler and the kubelet's admission match
    no node where it refuses the label or the value, so Phalanx must not bind there."""
    assert matches_requirement(value, requirement) is matches


@pytest.mark.parametrize(
    ("toleration", "taint", "ok"),
    [
        (Toleration("k", "Equal", "v", "NoSchedule"), Taint("k", "v", "NoSchedule"), True),
        (Toleration("k", "Equal", "w", "NoSchedule"), Taint("k", "v", "NoSchedule"), False),
        (Toleration("k", "Exists", "", ""), Taint("k", "v", "NoExecute"), True),
        (Toleration("", "Exists", "", ""), Taint("any", "v", "NoSchedule"), True),
        (Toleration("k", "Equal", "v", "NoExecute"), Taint("k", "v", "NoSchedule"), False),
        (Toleration("j", "Exists", "", ""), Taint("k", "v", "NoSchedule"), False),
    ],
)
def test_tolerations(toleration: Toleration, taint: Taint, ok: bool) -> None:
    assert tolerates(toleration, taint) is ok


def test_each_exclusion_is_counted_in_one_sorted_sentence() -> None:
    zone_a = {"zone": "a"}
    nodes = [
        node("tainted-1", labels=zone_a, taints=(Taint("dedicated", "x", "NoSchedule"),)),
        node("tainted-2", labels=zone_a, taints=(Taint("gpu", "", "NoExecute"),
                                                 Taint("dedicated", "x", "NoSchedule"))),
        node("cordoned", labels=zone_a, unschedulable=True),
        node("down", labels=zone_a, ready=False),
        node("full", labels=zone_a),
        node("small", gpus=2, labels=zone_a),
        node("nopods", labels=zone_a, pods=1),
        node("other-zone", labels={"zone": "b"}),
    ]
    busy = [pod("busy", gpus=8, node_name="full"), pod("other", gpus=0, node_name="nopods")]
    result = cycle(nodes, busy, pod("big", gpus=4, node_selector=zone_a))
    found = decision(result, "default/big")
    assert found.reason == "InsufficientResources"
    assert found.message.endswith(
        "0/8 nodes are available: 2 Insufficient nvidia.com/gpu, 1 Too many pods, "
        "1 node(s) didn't match Pod's node selector, 1 node(s) had untolerated taint "
        "{dedicated: x}, 1 node(s) had untolerated taint {gpu: }, 1 node(s) were not ready, "
        "1 node(s) were unschedulable."
    )


def test_preferno_schedule_taint_does_not_block() -> None:
    result = cycle(node("n", taints=(Taint("soft", "", "PreferNoSchedule"),)), pod("p"))
    assert nodes_of(result, "default/p") == ["n"]


def test_toleration_opens_tainted_node() -> None:
    tainted = node("n", taints=(Taint("gpu", "h100", "NoSchedule"),))
    tolerant = pod("p", tolerations=(Toleration("gpu", "Equal", "h100", "NoSchedule"),))
    assert nodes_of(cycle(tainted, tolerant), "default/p") == ["n"]


def test_affinity_terms_are_ored_and_expressions_anded() -> None:
    nodes = [
        node("a", labels={"gpu": "h100", "zone": "1"}),
        node("b", labels={"gpu": "a100", "zone": "2"}),
        node("c", labels={"gpu": "h100", "zone": "3"}),
    ]
    terms = (
        NodeSelectorTerm(
            (
                NodeSelectorRequirement("gpu", "In", ("h100",)),
                NodeSelectorRequirement("zone", "In", ("3",)),
            )
        ),
        NodeSelectorTerm(match_fields=(NodeSelectorRequirement("metadata.name", "In", ("b",)),)),
    )
    pods = [pod(f"p{i}", gpus=8, affinity=terms) for i in range(3)]
    result = cycle(nodes, pods)
    placed = sorted(b.node for b in result.bindings)
    assert placed == ["b", "c"]
    assert "1 node(s) didn't match Pod's node affinity" in decision(result, "default/p2").message


def test_a_resource_the_node_lacks_counts_as_zero() -> None:
    fpga = replace(pod("p", gpus=0), requests={"example.com/fpga": 1000})
    result = cycle(node("n"), fpga)
    assert decision(result, "default/p").message.endswith(
        "1 Insufficient example.com/fpga. No node could take one such pod even if empty: it "
        "asks for 1 example.com/fpga (the most a node has is 0)."
    )


def test_a_pod_larger_than_any_node_is_told_so() -> None:
    """16 GPUs asked of 8-GPU nodes waits for ever, however the cluster empties: the
    message says what exceeds the largest node; a pod that only waits for room is not
    told so."""
    nodes = [node("a"), node("b", gpus=4)]
    result = cycle(nodes, pod("big", gpus=16), pod("busy", gpus=8, node_name="a"), pod("p"))
    message = decision(result, "default/big").message
    assert message.endswith("No node could take one such pod even if empty: it asks for "
                            "16 nvidia.com/gpu (the most a node has is 8).")
    waits = cycle(nodes, pod("busy", gpus=8, node_name="a"), pod("w", gpus=8))
    assert "even if empty" not in decision(waits, "default/w").message


def test_equal_pods_share_one_shape_object_equal_to_a_fresh_one() -> None:
    """Shapes key the cycle's caches, found by identity when equal pods share one object
    (`shapes._interned`); the shared object is the shape the pod's fields make, and a pod
    that asks differently gets its own."""
    from phalanx.core.snapshot.predicates import NO_CONSTRAINTS, constraints_of
    from phalanx.core.snapshot.shapes import Shape, request_items, shape_of

    first, second = pod("a", cpu=3, gpu_milli=250, gpus=0), pod("b", cpu=3, gpu_milli=250, gpus=0)
    assert shape_of(first) is shape_of(second)
    assert constraints_of(first) is NO_CONSTRAINTS
    fresh = Shape(request_items(first.requests), constraints_of(first), 250, 0)
    assert shape_of(first) == fresh and hash(shape_of(first)) == hash(fresh)
    assert shape_of(pod("c", cpu=4, gpu_milli=250, gpus=0)) != shape_of(first)
    tolerant = replace(first, tolerations=(Toleration("k", "Exists", "", "NoSchedule"),))
    assert constraints_of(tolerant) != NO_CONSTRAINTS
    assert shape_of(tolerant) != shape_of(first)


def test_a_gt_value_that_is_no_integer_is_named_in_the_wait_message() -> None:
    """The API server accepts `Gt: ["40GB"]`; no node can match it, and the pod's wait
    message says which requirement and why, not only that no node matched. A valid
    Gt in the same pod is not named."""
    nodes = [node(f"n{i}", labels={"gpu-memory": "80"}) for i in range(2)]
    bad = NodeSelectorTerm((
        NodeSelectorRequirement("gpu-memory", "Gt", ("40",)),
        NodeSelectorRequirement("gpu-memory", "Gt", ("40GB",)),
    ))  # fmt: skip
    result = cycle(nodes, pod("p", gpus=1, affinity=(bad,)))
    message = decision(result, "default/p").message
    assert "2 node(s) didn't match Pod's node affinity" in message
    assert "Node affinity gpu-memory Gt '40GB' matches no node" in message
    assert "Gt '40'" not in message
    good = NodeSelectorTerm((NodeSelectorRequirement("gpu-memory", "Gt", ("40",)),))
    assert nodes_of(cycle(nodes, pod("p", gpus=1, affinity=(good,))), "default/p") == ["n0"]


def test_a_selector_label_that_no_node_carries_is_named_in_the_wait_message() -> None:
    """A typo or a GPU model the cluster lacks: the wait message names the label, not only
    that no node matched; a label some node carries is not named."""
    nodes = [node("a", labels={"gpu": "h100", "zone": "1"}), node("b", labels={"gpu": "a100"})]
    typo = pod("p", gpus=1, node_selector={"gpu": "h10O", "zone": "1"})
    message = decision(cycle(nodes, typo), "default/p").message
    assert "2 node(s) didn't match Pod's node selector" in message
    assert "No node has the label gpu=h10O that its nodeSelector asks for." in message
    assert "zone=1" not in message
    # Each label exists, on different nodes: no label is absent, none is named.
    apart = pod("q", gpus=1, node_selector={"gpu": "a100", "zone": "1"})
    assert "No node has" not in decision(cycle(nodes, apart), "default/q").message
