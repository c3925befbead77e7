"""Kubernetes 1.37's CompositePodGroup: its children PodGroups placed as one unit, all of
them or none, each child inside its own level, all of them inside the composite's level;
what Phalanx cannot place yet is refused by name."""

from __future__ import annotations

from typing import Any

from phalanx.core import run_cycle, snapshot_from_objects
from phalanx.core.model.result import CycleResult

GPU = "nvidia.com/gpu"
BLOCK, RACK = "test/block", "test/rack"


def nodes(blocks: int = 2, racks: int = 2, per_rack: int = 2) -> list[dict[str, Any]]:
    return [{"kind": "Node",
             "metadata": {"name": f"b{b}-r{r}-n{i}",
                          "labels": {BLOCK: f"b{b}", RACK: f"b{b}-r{r}",
                                     "kubernetes.io/hostname": f"b{b}-r{r}-n{i}"}},
             "status": {"allocatable": {GPU: "8", "cpu": "64", "pods": "110"}}}
            for b in range(blocks) for r in range(racks) for i in range(per_rack)]


def composite(name: str = "block", min_groups: int = 2, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"schedulingPolicy": {"gang": {"minGroupCount": min_groups}},
                     "schedulingConstraints": {"topology": [{"key": BLOCK}]}, **spec}}


def child(name: str, count: int = 2, key: str = RACK, parent: str = "block") -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"parentCompositePodGroupName": parent,
                     "workloadRef": {"workloadName": "w", "templateName": name},
                     "schedulingPolicy": {"gang": {"minCount": count}},
                     "schedulingConstraints": {"topology": [{"key": key}]}}}


def pods_of(group: str, count: int = 2, gpus: int = 8,
            names: list[str] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    return [{"kind": "Pod",
             "metadata": {"name": (names or [])[i] if names else f"{group}-{i}",
                          "namespace": "ml"},
             "spec": {"schedulerName": "phalanx", "schedulingGroup": {"podGroupName": group},
                      "containers": [{"name": "c", "resources": {"limits": {GPU: str(gpus)}}}]}}
            for i in range(count)]


def cycle(*objects: Any) -> CycleResult:
    flat = [o for item in objects for o in (item if isinstance(item, list) else [item])]
    return run_cycle(snapshot_from_objects(flat))


def where(result: CycleResult) -> dict[str, str]:
    return {str(b.pod).split("/")[1]: str(b.node) for b in result.bindings}


def test_each_child_lands_in_its_own_rack_and_both_in_one_block() -> None:
    """Pod names interleave the children (w-0 and w-2 are a's): sub-groups follow the
    children, not the names."""
    result = cycle(nodes(), composite(), child("a"), child("b"),
                   pods_of("a", names=["w-0", "w-2"]), pods_of("b", names=["w-1", "w-3"]))
    placed = where(result)
    assert len(placed) == 4
    rack = {name: node.rsplit("-", 1)[0] for name, node in placed.items()}
    assert rack["w-0"] == rack["w-2"] and rack["w-1"] == rack["w-3"]  # each child in a rack
    assert rack["w-0"] != rack["w-1"]
    assert len({node.split("-")[0] for node in placed.values()}) == 1  # both in one block
    [decision] = result.groups
    assert str(decision.group) == "ml/block" and decision.scheduled


def test_none_starts_when_the_children_fit_no_block_together() -> None:
    """Each block holds one rack: either child alone would fit one, both need two racks of
    one block, so neither starts."""
    result = cycle(nodes(racks=1), composite(), child("a"), child("b"), pods_of("a"),
                   pods_of("b"))
    assert result.bindings == ()
    assert result.groups[0].reason == "NoDomainFits"


def test_children_of_different_sizes_are_refused_by_name() -> None:
    result = cycle(nodes(), composite(), child("a"), child("b", 3), pods_of("a"),
                   pods_of("b", 3))
    assert result.bindings == ()
    assert all("same minCount" in decision.message for decision in result.groups)


def test_too_many_children_for_a_block_wait_whole() -> None:
    result = cycle(nodes(), composite(min_groups=3), child("a"), child("b"), child("c"),
                   *(pods_of(g) for g in "abc"))
    assert result.bindings == ()
    assert result.groups[0].reason == "NoDomainFits"


def test_what_phalanx_cannot_place_yet_is_named() -> None:
    fewer = cycle(nodes(), composite(min_groups=1), child("a"), child("b"),
                  pods_of("a"), pods_of("b"))
    assert fewer.bindings == () and "all children or none" in fewer.groups[0].message
    orphan = cycle(nodes(), child("a", parent="gone"), pods_of("a"))
    assert orphan.bindings == () and "CompositePodGroup gone does not exist" in (
        orphan.groups[0].message)
