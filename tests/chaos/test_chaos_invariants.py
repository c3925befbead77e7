"""The chaos suite's checks catch what they claim to: an overcommitted node, a gang left
partly bound (and for how long), pods never bound."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bench.chaos.invariants import GangInfo, Invariants

NS = "chaos"
LABEL = "scheduling.phalanx.io/pod-group"


def pod(name: str, node: str = "", gpus: int = 8, group: str = "g", phase: str = "Pending",
        namespace: str = NS) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": {LABEL: group}},
        "spec": {"nodeName": node, "containers": [
            {"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]},
        "status": {"phase": phase},
    }


def watching(**gangs: int) -> Invariants:
    invariants = Invariants({"n1": 8, "n2": 8}, NS, LABEL)
    for gang, size in gangs.items():
        invariants.expect(gang, frozenset(f"{gang}-{i}" for i in range(size)))
    return invariants


def test_a_node_given_more_gpus_than_it_has_is_an_overcommit_even_across_namespaces() -> None:
    invariants = watching()
    invariants.observe(pod("other", "n1", gpus=4, namespace="elsewhere"), False, 1.0)
    invariants.observe(pod("g-0", "n1", gpus=4), False, 2.0)
    assert invariants.overcommits == []
    invariants.observe(pod("g-1", "n1", gpus=1), False, 3.0)
    assert [(o.node, o.requested, o.allocatable, o.at) for o in invariants.overcommits] == [
        ("n1", 9, 8, 3.0)]


def test_finished_and_deleted_pods_free_their_gpus() -> None:
    invariants = watching()
    invariants.observe(pod("a", "n1", phase="Running"), False, 1.0)
    invariants.observe(pod("a", "n1", phase="Succeeded"), False, 2.0)
    invariants.observe(pod("b", "n1"), False, 3.0)
    invariants.observe(pod("b", "n1"), True, 4.0)
    invariants.observe(pod("c", "n1"), False, 5.0)
    assert invariants.overcommits == []


def test_a_partial_gang_is_timed_from_its_first_to_its_last_binding() -> None:
    invariants = watching(g=2)
    invariants.observe(pod("g-0"), False, 1.0)
    invariants.observe(pod("g-1"), False, 1.0)
    invariants.observe(pod("g-0", "n1"), False, 2.0)
    assert invariants.longest_partial(5.0) == 3.0  # still open
    invariants.observe(pod("g-1", "n2"), False, 6.5)
    invariants.observe(pod("g-0", "n1", phase="Succeeded"), False, 9.0)  # done, not partial
    assert invariants.partial_episodes == [("g", 4.5)]
    assert invariants.longest_partial(100.0) == 4.5
    assert invariants.unbound() == []


def test_pods_never_bound_are_reported_and_an_open_partial_is_closed_at_the_end() -> None:
    invariants = watching(g=2, h=1)
    invariants.observe(pod("g-0", "n1"), False, 1.0)
    invariants.finish(11.0)
    assert invariants.unbound() == ["g-1", "h-0"]
    assert invariants.partial_episodes == [("g", 10.0)]


def evicting(name: str, uid: str, node: str = "n1", asked: str = "", deleting: bool = False,
             version: int = 1, group: str = "g") -> dict[str, Any]:
    """A pod of `group` bound on `node`; `asked`: the stamp of Phalanx's DisruptionTarget."""
    body = pod(name, node, group=group, phase="Running")
    body["metadata"].update(uid=uid, resourceVersion=str(version))
    if deleting:
        body["metadata"]["deletionTimestamp"] = "2026-12-05T10:00:00Z"
    if asked:
        body["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True",
                                         "reason": "PreemptionByScheduler", "message":
                                         "phalanx: preempted by chaos/h (priority 1000)",
                                         "lastTransitionTime": asked}]
    return body


def test_an_eviction_asked_again_of_a_pod_being_deleted_is_an_eviction_twice() -> None:
    invariants = watching(g=2)
    invariants.observe(evicting("g-0", "u0"), False, 1.0)
    invariants.observe(evicting("g-0", "u0", asked="t1"), False, 2.0)
    invariants.observe(evicting("g-0", "u0", asked="t2"), False, 2.5)  # retried: not twice
    invariants.observe(evicting("g-0", "u0", deleting=True), False, 3.0)  # the API's own
    assert invariants.evicted_twice() == []
    assert [e.why for e in invariants.evicted.values()] == [
        "phalanx: preempted by chaos/h (priority 1000)"]
    invariants.observe(evicting("g-0", "u0", asked="t2", deleting=True), False, 4.0)
    assert invariants.evicted_twice() == ["chaos/g-0"]


def test_gangs_end_bound_waiting_evicted_whole_or_lost() -> None:
    invariants = watching(b=1, w=1, e=2, lost=2)
    invariants.observe(evicting("b-0", "ub", group="b"), False, 1.0)
    invariants.observe(pod("w-0", group="w"), False, 1.0)
    for name in ("e-0", "e-1", "lost-0", "lost-1"):
        invariants.observe(evicting(name, name, group=name[:-2]), False, 1.0)
    for name in ("e-0", "e-1", "lost-0"):
        invariants.observe(evicting(name, name, group=name[:-2]), True, 2.0)
    assert invariants.gang_states() == {"b": "bound", "w": "waiting", "e": "evicted",
                                        "lost": "lost"}


def held(name: str, version: int, reason: str = "Preempting",
         expires: str = "2999-01-01T00:00:00Z", nodes: tuple[str, ...] = ("n1",),
         since: str = "2026-12-05T10:00:00Z") -> dict[str, Any]:
    nominated = {"nodes": list(nodes), "reason": reason, "since": since, "expires": expires}
    return {"metadata": {"name": name, "namespace": NS, "resourceVersion": str(version)},
            "status": {"nominated": nominated}}


def test_a_lower_gang_bound_on_a_held_node_while_held_is_a_violation() -> None:
    invariants = watching(h=1, low=1, high=1, early=1, late=1)
    for gang, priority in {"h": 100, "low": 0, "high": 1000, "early": 0, "late": 0}.items():
        invariants.info[gang] = GangInfo(priority, "q")
    invariants.observe(pod("early-0", "n1", group="early") | {"metadata": {
        "name": "early-0", "namespace": NS, "labels": {LABEL: "early"},
        "resourceVersion": "5"}}, False, 1.0, 1.0)
    invariants.observe_group(held("h", 10), False)
    invariants.observe(evicting("high-0", "u1", version=11, group="high"), False, 2.0, 2.0)
    invariants.observe(evicting("h-0", "u2", version=12, group="h"), False, 2.0, 2.0)
    invariants.observe(evicting("low-0", "u3", version=13, group="low"), False, 2.0, 2.0)
    invariants.observe_group({"metadata": {"name": "h", "namespace": NS,
                                           "resourceVersion": "20"}, "status": {}}, False)
    invariants.observe(evicting("late-0", "u4", version=21, group="late"), False, 3.0, 3.0)
    violations = invariants.nomination_violations()
    assert len(violations) == 1 and violations[0].startswith("chaos/low-0 (group low")


def test_a_reserved_hold_lends_its_room_to_no_gang_without_a_runtime_limit() -> None:
    """Reserved room takes only a lower gang that ends by its start (backfill); the chaos
    gangs declare no runtime limit, so any lower gang there, of any queue, is a violation."""
    invariants = watching(h=1, mine=1, other=1)
    invariants.info.update(h=GangInfo(100, "a"), mine=GangInfo(0, "a"), other=GangInfo(0, "b"))
    invariants.observe_group(held("h", 10, reason="Reserved"), False)
    invariants.observe(evicting("mine-0", "u1", version=11, group="mine"), False, 2.0, 2.0)
    invariants.observe(evicting("other-0", "u2", version=12, group="other"), False, 2.0, 2.0)
    assert [v.split(" ")[0] for v in invariants.nomination_violations()] == [
        "chaos/mine-0", "chaos/other-0"]


def test_an_expired_hold_holds_nothing() -> None:
    invariants = watching(h=1, low=1)
    invariants.info.update(h=GangInfo(100, "a"), low=GangInfo(0, "a"))
    invariants.observe_group(held("h", 10, expires="2026-12-05T10:00:00Z"), False)
    invariants.observe(evicting("low-0", "u1", version=11, group="low"), False, 2.0,
                       1_900_000_000.0)
    assert invariants.nomination_violations() == []


def test_a_hold_goes_with_the_cycle_that_places_its_holder_elsewhere() -> None:
    """`h` is placed on n2 while its hold on n1 still shows; `low`, placed in that cycle on
    n1, takes nothing (the status write removing the hold lands after it). A lower gang on
    n1 a cycle before `h` was placed is still a violation."""
    invariants = watching(h=1, low=1, early=1)
    invariants.info.update(h=GangInfo(1000, "a"), low=GangInfo(0, "a"), early=GangInfo(0, "a"))
    invariants.observe_group(held("h", 10), False)
    invariants.observe(evicting("early-0", "u0", version=11, group="early"), False, 1.0, 1.0)
    invariants.observe(pod("h-0", "n2", group="h") | {"metadata": {
        "name": "h-0", "namespace": NS, "labels": {LABEL: "h"},
        "resourceVersion": "20"}}, False, 5.0, 5.0)
    invariants.observe(evicting("low-0", "u1", version=19, group="low"), False, 5.0, 5.0)
    invariants.observe_group({"metadata": {"name": "h", "namespace": NS,
                                           "resourceVersion": "21"}, "status": {}}, False)
    assert [v.split(" ")[0] for v in invariants.nomination_violations()] == ["chaos/early-0"]


def test_a_hold_moved_off_a_node_frees_it_from_the_cycle_that_moved_it() -> None:
    """`h`'s hold moves from n1 to n2 in a cycle at 10:00:05 (a higher gang took part of
    its room; it evicts elsewhere); `low`, placed on n1 in that cycle, is bound before the
    status write that shows the move: it takes nothing. `early`, bound on n1 before that
    cycle, took held room."""
    moved = datetime(2026, 12, 5, 10, 0, 5, tzinfo=UTC).timestamp()
    invariants = watching(h=1, low=1, early=1)
    invariants.info.update(h=GangInfo(100, "a"), low=GangInfo(0, "a"), early=GangInfo(0, "a"))
    invariants.observe_group(held("h", 10), False)
    invariants.observe(evicting("early-0", "u0", version=11, group="early"), False, 1.0,
                       moved - 3.0)
    invariants.observe(evicting("low-0", "u1", version=19, group="low"), False, 5.0,
                       moved + 0.2)
    invariants.observe_group(held("h", 21, nodes=("n2",), since="2026-12-05T10:00:05Z"), False)
    assert [v.split(" ")[0] for v in invariants.nomination_violations()] == ["chaos/early-0"]
