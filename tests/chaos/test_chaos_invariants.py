"""The chaos suite's checks catch what they claim to: an overcommitted node, a gang left
partly bound (and for how long), pods never bound."""

from __future__ import annotations

from typing import Any

from bench.chaos.invariants import Invariants

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
