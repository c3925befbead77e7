"""A gang's failed nodes are named from its placement, whatever took its pods away."""

from __future__ import annotations

from core_builders import node, snapshot_of

from phalanx.core.model import Taint
from phalanx.core.node_loss import LostNode, lost_message, lost_nodes


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
