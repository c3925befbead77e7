"""A workload's PodGroups follow the workload with as few writes as possible."""

from __future__ import annotations

import copy
from typing import Any

from phalanx.workloads.reconcile import changes_for, owned_by


def group(name: str, min_member: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.phalanx.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "labels": {"app.kubernetes.io/managed-by": "phalanx"},
            "ownerReferences": [{"kind": "LeaderWorkerSet", "name": "serve", "uid": "u1"}],
        },
        "spec": {"minMember": min_member, "queue": "a", **spec},
    }


def as_stored(obj: dict[str, Any]) -> dict[str, Any]:
    """What the API server returns: defaults filled in, metadata added."""
    stored = copy.deepcopy(obj)
    stored["metadata"]["resourceVersion"] = "7"
    stored["metadata"]["labels"]["extra"] = "kept"
    stored["spec"].setdefault("topology", {})["networkTopology"] = "default"
    stored["status"] = {"phase": "Running"}
    return stored


def test_missing_groups_are_created_and_stored_ones_left_alone() -> None:
    desired = [group("lws-serve-0", 4), group("lws-serve-1", 4)]
    changes = changes_for(desired, [as_stored(desired[0])])
    assert [g["metadata"]["name"] for g in changes.apply] == ["lws-serve-1"]
    assert changes.delete == ()
    assert not changes_for(desired, [as_stored(g) for g in desired])


def test_a_changed_spec_is_applied_again() -> None:
    desired = [group("lws-serve-0", 8)]
    changes = changes_for(desired, [as_stored(group("lws-serve-0", 4))])
    assert changes.apply == tuple(desired)


def test_groups_of_a_scaled_down_workload_are_deleted() -> None:
    owned = [as_stored(group(f"lws-serve-{i}", 4)) for i in range(3)]
    changes = changes_for([group("lws-serve-0", 4)], owned)
    assert changes.delete == ("lws-serve-1", "lws-serve-2")
    assert changes.apply == ()


def test_ownership_is_by_uid() -> None:
    stored = as_stored(group("lws-serve-0", 4))
    assert owned_by(stored, "u1")
    assert not owned_by(stored, "u2")  # a new workload of the same name
