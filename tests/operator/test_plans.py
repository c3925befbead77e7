"""A leftover plan is finished, dropped or left alone depending on how far it got."""

from __future__ import annotations

from typing import Any

from operator_fakes import pod

from phalanx.operator.plans import LeftoverAction, Plan, PlanBook, decode_plan, resolve

PLAN = Plan("p1", "ns/g", {"ns/a": "n1", "ns/b": "n2", "ns/c": "n3"}, 1000.0)


def carrying(plan: Plan, name: str = "a", node: str = "n1", **kw: Any) -> dict[str, Any]:
    """A pod bound with `plan` on its binding, as the API server leaves it."""
    body = pod(name, node=node, **kw)
    body["metadata"].setdefault("annotations", {})["scheduling.phalanx.io/plan"] = (
        plan.annotation())
    return body


def test_plan_round_trips_through_the_annotation():
    assert decode_plan(carrying(PLAN)) == PLAN
    plan = Plan("p2", "ns/g", {"ns/a": "n1", "ns/b": "n1"}, 5.5, {"ns/a": "3", "ns/b": "0,1"},
                {"ns/a": "uid-a"})
    assert decode_plan(carrying(plan)) == plan


def test_unreadable_plan_is_no_plan():
    body = pod("a", node="n1")
    body["metadata"]["annotations"] = {"scheduling.phalanx.io/plan": '{"x": 1}'}
    assert decode_plan(body) is None
    body["metadata"]["annotations"] = {"scheduling.phalanx.io/plan": "not json"}
    assert decode_plan(body) is None
    assert decode_plan(pod("a", node="n1")) is None


def test_partly_bound_plan_is_finished_on_the_same_nodes():
    pods = {"ns/a": pod("a", node="n1"), "ns/b": pod("b"), "ns/c": pod("c")}
    result = resolve(PLAN, pods, {"n1", "n2", "n3"})
    assert result.action is LeftoverAction.FINISH
    assert result.remaining == {"ns/b": "n2", "ns/c": "n3"}


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


def test_a_pod_made_again_under_a_planned_name_is_not_the_plans():
    plan = Plan("p3", "ns/g", {"ns/a": "n1", "ns/b": "n2"}, 1000.0, uids={"ns/b": "old"})
    again = pod("b")
    again["metadata"]["uid"] = "new"
    pods = {"ns/a": pod("a", node="n1"), "ns/b": again}
    assert resolve(plan, pods, {"n1", "n2"}).action is LeftoverAction.DONE


def test_leftovers_are_a_previous_leaders_young_plans_each_handed_out_once():
    book = PlanBook(finish_seconds=60)
    own = book.start("ns/mine", {"ns/x": "n1", "ns/y": "n1"}, {}, {}, now=1000.0)
    pods = [carrying(PLAN), carrying(PLAN, "b", "n2"), carrying(own, "x"),
            carrying(Plan("old", "ns/h", {"ns/z": "n1"}, 900.0), "z")]
    assert book.leftovers(pods, now=1030.0) == [PLAN]  # not ours, not past 60 s
    assert book.leftovers(pods, now=1031.0) == []  # handed out already
    unbound = carrying(Plan("p9", "ns/k", {"ns/k": "n1"}, 1000.0), "k")
    del unbound["spec"]["nodeName"]
    assert PlanBook(60).leftovers([unbound], now=1001.0) == []  # only bound pods carry one


def test_a_new_plan_names_its_pods_uids():
    book = PlanBook(60, new_id=lambda: "id1")
    pods = {"ns/a": pod("a"), "ns/b": pod("b")}
    pods["ns/a"]["metadata"]["uid"] = "u-a"
    plan = book.start("ns/g", {"ns/a": "n1", "ns/b": "n2"}, {"ns/a": "0"}, pods, now=7.0)
    assert plan == Plan("id1", "ns/g", {"ns/a": "n1", "ns/b": "n2"}, 7.0, {"ns/a": "0"},
                        {"ns/a": "u-a", "ns/b": "uid-b"})


def test_a_pod_is_read_again_when_it_changes_and_not_before():
    """A plan is decoded once per change of its pod; a pod made again under the same name
    and bound with a newer plan (a new resourceVersion) is read again."""
    book = PlanBook(finish_seconds=60)
    first = carrying(Plan("p1", "ns/g", {"ns/a": "n1", "ns/b": "n2"}, 1000.0))
    first["metadata"]["resourceVersion"] = "7"
    assert [p.id for p in book.leftovers([first], now=1001.0)] == ["p1"]
    probe = carrying(Plan("p5", "ns/g", {"ns/a": "n1", "ns/b": "n2"}, 1000.0))
    probe["metadata"]["resourceVersion"] = "7"  # a probe: the API server never does this
    assert book.leftovers([probe], now=1002.0) == []  # same version: not read again
    newer = carrying(Plan("p2", "ns/g", {"ns/a": "n1", "ns/b": "n2"}, 1010.0))
    newer["metadata"]["resourceVersion"] = "9"
    assert [p.id for p in book.leftovers([newer], now=1011.0)] == ["p2"]
