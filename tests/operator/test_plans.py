"""A leftover plan is finished, dropped or cleared depending on how far it got."""

from __future__ import annotations

from operator_fakes import pod, podgroup

from phalanx.operator.plans import LeftoverAction, Plan, decode_plan, resolve

PLAN = Plan("p1", {"ns/a": "n1", "ns/b": "n2", "ns/c": "n3"})


def test_plan_round_trips_through_the_status():
    group = podgroup(status={"plan": PLAN.status()})
    assert decode_plan(group) == PLAN


def test_a_plan_replacing_another_removes_the_pods_it_does_not_have():
    """A merge patch merges maps: pods of the old plan must be nulled explicitly."""
    old = Plan("p0", {"ns/a": "n9", "ns/z": "n9"}).status()
    patch = PLAN.status(replacing=old)
    assert patch["pods"]["ns/z"] is None and patch["pods"]["ns/a"] == "n1"
    merged = {**old["pods"], **patch["pods"]}
    assert decode_plan(podgroup(status={"plan": {"id": patch["id"], "pods": merged}})) == PLAN


def test_unreadable_plan_is_no_plan():
    assert decode_plan(podgroup(status={"plan": {"x": 1}})) is None
    assert decode_plan(podgroup(status={"plan": "not a map"})) is None


def test_partly_bound_plan_is_finished_on_the_same_nodes():
    pods = {"ns/a": pod("a", node="n1"), "ns/b": pod("b"), "ns/c": pod("c")}
    result = resolve(PLAN, pods, {"n1", "n2", "n3"})
    assert result.action is LeftoverAction.FINISH
    assert result.remaining == {"ns/b": "n2", "ns/c": "n3"}


def test_plan_with_nothing_bound_is_dropped():
    pods = {"ns/a": pod("a"), "ns/b": pod("b"), "ns/c": pod("c")}
    assert resolve(PLAN, pods, {"n1", "n2", "n3"}).action is LeftoverAction.DROP


def test_plan_whose_node_vanished_is_dropped():
    pods = {"ns/a": pod("a", node="n1"), "ns/b": pod("b"), "ns/c": pod("c")}
    assert resolve(PLAN, pods, {"n1", "n2"}).action is LeftoverAction.DROP


def test_fully_bound_plan_is_done():
    pods = {"ns/a": pod("a", node="n1"), "ns/b": pod("b", node="n2")}  # c was deleted
    assert resolve(PLAN, pods, {"n1", "n2", "n3"}).action is LeftoverAction.DONE


def test_ungated_pods_count_as_placed():
    ungated = pod("a", scheduler="default-scheduler")
    pods = {"ns/a": ungated, "ns/b": pod("b", gated=True, scheduler="default-scheduler"),
            "ns/c": pod("c", node="n3")}
    result = resolve(PLAN, pods, {"n1", "n2", "n3"})
    assert result.action is LeftoverAction.FINISH and result.remaining == {"ns/b": "n2"}


def test_a_plan_keeps_the_gpu_devices_of_its_pods_through_the_status():
    plan = Plan("p2", {"ns/a": "n1", "ns/b": "n1"}, {"ns/a": "3", "ns/b": "0,1"})
    assert decode_plan(podgroup(status={"plan": plan.status()})) == plan
    patch = PLAN.status(replacing=plan.status())
    assert patch["devices"] == {"ns/a": None, "ns/b": None}  # merge patch: nulled
    assert "devices" not in PLAN.status()
