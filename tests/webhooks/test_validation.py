"""What the validating webhook refuses, and the words it uses (webhooks/queues.py,
podgroups.py): each refusal names the field."""

from __future__ import annotations

from typing import Any

from phalanx.core.model.inputs import QueueInfo
from phalanx.core.parse.queue import parse_queue
from phalanx.webhooks.podgroups import validate_podgroup
from phalanx.webhooks.queues import Verdict, validate_queue


def queue(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "Queue",
            "metadata": {"name": name}, "spec": spec}


def existing(*objects: dict[str, Any]) -> dict[str, QueueInfo]:
    return {o["metadata"]["name"]: parse_queue(o) for o in objects}


GPUS = "nvidia.com/gpu"
TREE = existing(queue("org", capability={GPUS: 16}),
                queue("team-a", parent="org", guarantee={GPUS: 8}),
                queue("team-b", parent="team-a"))


def test_a_queue_that_fits_its_tree_is_allowed() -> None:
    assert validate_queue(queue("team-c", parent="org", guarantee={GPUS: 8}), TREE,
                          allow_unknown=False) == Verdict()


def test_a_parent_cycle_is_refused_naming_spec_parent() -> None:
    verdict = validate_queue(queue("org", parent="team-b", capability={GPUS: 16}), TREE, False)
    assert verdict.refusal == (
        "spec.parent: team-b makes a cycle of parents (org -> team-b -> team-a -> org)")
    assert validate_queue(queue("solo", parent="solo"), TREE, False).refusal == (
        "spec.parent: solo makes a cycle of parents (solo -> solo)")


def test_children_guaranteed_above_the_parent_s_capability_are_refused() -> None:
    verdict = validate_queue(queue("team-c", parent="org", guarantee={GPUS: 12}), TREE, False)
    assert verdict.refusal == (
        "spec.guarantee: the children of queue org would be guaranteed 20 GPUs in all "
        "(team-a 8, team-c 12), above its capability of 16 GPUs")
    # Raising a child's guarantee counts its new value, not its old one.
    raised = validate_queue(queue("team-a", parent="org", guarantee={GPUS: 17}), TREE, False)
    assert raised.refusal is not None and raised.refusal.startswith("spec.guarantee: ")
    assert "17 GPUs in all (team-a 17)" in raised.refusal


def test_a_parent_whose_capability_drops_below_its_children_s_guarantees_is_refused() -> None:
    verdict = validate_queue(queue("org", capability={GPUS: 4}), TREE, False)
    assert verdict.refusal == (
        "spec.capability: 4 GPUs is less than its children guarantee in all (8 GPUs: team-a 8)")
    assert validate_queue(queue("org"), TREE, False) == Verdict()  # no capability: no bound


def test_other_resources_are_judged_each_on_its_own() -> None:
    tree = existing(queue("org", capability={"cpu": "10", GPUS: 16}),
                    queue("team-a", parent="org", guarantee={"cpu": "6"}))
    verdict = validate_queue(queue("team-c", parent="org", guarantee={"cpu": "6", GPUS: 16}),
                             tree, False)
    assert verdict.refusal is not None and "12 cpu in all" in verdict.refusal


def test_an_unknown_parent_is_refused_or_allowed_with_a_warning() -> None:
    child = queue("team-z", parent="nowhere")
    assert validate_queue(child, TREE, False).refusal == (
        "spec.parent: queue nowhere does not exist (create it first)")
    allowed = validate_queue(child, TREE, True)
    assert allowed.refusal is None
    assert allowed.warnings == (
        "spec.parent: queue nowhere does not exist (yet); until it does, this queue has no "
        "parent",)


def test_a_queue_the_core_cannot_read_is_refused_naming_the_field() -> None:
    verdict = validate_queue(queue("odd", state="Paused"), TREE, False)
    assert verdict.refusal == "spec.state: expected Open or Closed, got 'Paused'"


def group(queue_name: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": 1}
    if queue_name is not None:
        spec["queue"] = queue_name
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ml"}, "spec": spec}


def test_a_podgroup_of_an_unknown_queue_is_refused_naming_spec_queue() -> None:
    verdict = validate_podgroup(group("team-x"), None, {"default", "team-a"}, False)
    assert verdict.refusal == ("spec.queue: queue team-x does not exist (create the Queue "
                               "first, or name one of: default, team-a)")


def test_gitops_ordering_allows_it_with_a_warning() -> None:
    verdict = validate_podgroup(group("team-x"), None, {"default"}, True)
    assert verdict.refusal is None
    assert verdict.warnings == (
        "spec.queue: queue team-x does not exist (yet); the group waits until it does",)


def test_known_queues_the_default_and_unchanged_queues_pass() -> None:
    assert validate_podgroup(group("team-a"), None, {"team-a"}, False) == Verdict()
    assert validate_podgroup(group(None), None, {"default"}, False) == Verdict()
    # An edit that keeps a queue deleted meanwhile is not blocked; one that changes it is.
    assert validate_podgroup(group("gone"), group("gone"), {"default"}, False) == Verdict()
    assert validate_podgroup(group("gone"), group("default"), {"default"}, False).refusal
