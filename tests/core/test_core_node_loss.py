"""A gang's failed nodes are named from its placement, whatever took its pods away."""

from __future__ import annotations

from core_builders import node, snapshot_of

from phalanx.core.admission.node_loss import LostNode, lost_message, lost_nodes
from phalanx.core.model.inputs import Taint, Toleration


def test_deleted_not_ready_and_no_execute_nodes_are_lost_others_not() -> None:
    snapshot = snapshot_of([
        node("ok"),
        node("cordoned", unschedulable=True),  # running pods stay: not a failure
        node("soft", taints=(Taint("maintenance", effect="NoSchedule"),)),
        node("down", ready=False),
        node("fenced", taints=(Taint("node.kubernetes.io/unreachable", effect="NoExecute"),)),
    ])
    placed_on = ["ok", "cordoned", "soft", "down", "fenced", "gone", "down"]
    lost = lost_nodes(placed_on, snapshot.index)
    assert lost == (
        LostNode("down", "NotReady"),
        LostNode("fenced", "tainted node.kubernetes.io/unreachable:NoExecute"),
        LostNode("gone", "deleted"),
    )
    assert lost_message(lost) == ("node down (NotReady), node fenced (tainted "
                                  "node.kubernetes.io/unreachable:NoExecute), node gone (deleted)")
    assert lost_nodes([], snapshot.index) == ()


def test_a_no_execute_taint_the_gangs_pods_tolerate_is_no_failure() -> None:
    """A GPU pool tainted NoExecute for its own pods; the node lifecycle controller's
    taints count although pods tolerate them for a while."""
    pool = Taint("nvidia.com/gpu", "present", "NoExecute")
    unreachable = Taint("node.kubernetes.io/unreachable", effect="NoExecute")
    snapshot = snapshot_of([node("pool", taints=(pool,)),
                            node("cut", taints=(pool, unreachable))])
    gpu_pods = (Toleration("nvidia.com/gpu", "Exists"),
                Toleration("node.kubernetes.io/unreachable", "Exists", effect="NoExecute"))
    assert lost_nodes(["pool", "cut"], snapshot.index, [gpu_pods, gpu_pods]) == (
        LostNode("cut", "tainted node.kubernetes.io/unreachable:NoExecute"),)
    # One pod that does not tolerate the pool's taint would be evicted: a failure.
    assert [n.node for n in lost_nodes(["pool"], snapshot.index, [gpu_pods, ()])] == ["pool"]
    # No pods left to ask (all evicted): every NoExecute taint counts.
    assert [n.node for n in lost_nodes(["pool"], snapshot.index)] == ["pool"]
