"""The parse memo gives the same snapshot as parsing afresh, and re-parses what changed."""

from __future__ import annotations

from typing import Any

from phalanx.core.parse import snapshot_from_objects
from phalanx.operator.assumed import assumed_on
from phalanx.operator.cache_snapshot import ParseMemo


def pod(name: str, version: str, gpus: str = "8", node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "phalanx",
        "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": gpus}}}],
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                     "resourceVersion": version},
        "spec": spec, "status": {"phase": "Pending"},
    }


def counting(memo: ParseMemo) -> list[str]:
    calls: list[str] = []
    original = memo._memo  # wrap the real parser to count what is really parsed
    from phalanx.core.parse.objects import PARSERS

    def spy(obj: Any) -> object:
        calls.append(f"{obj['metadata']['name']}@{obj['metadata']['resourceVersion']}")
        return PARSERS["Pod"](obj)

    memo.parsers["Pod"] = original("Pod", spy)
    return calls


def test_unchanged_objects_are_parsed_once_and_changes_are_seen() -> None:
    memo = ParseMemo()
    calls = counting(memo)
    objects = [pod("a", "1"), pod("b", "1")]
    first = snapshot_from_objects(objects, parsers=memo.parsers)
    memo.rotate()
    second = snapshot_from_objects([pod("a", "1"), pod("b", "2", gpus="4")],
                                   parsers=memo.parsers)
    assert calls == ["a@1", "b@1", "b@2"]
    assert first.pods[0] is second.pods[0]
    fresh = snapshot_from_objects([pod("a", "1"), pod("b", "2", gpus="4")])
    assert second.pods == fresh.pods


def test_an_assumed_pod_is_not_mistaken_for_its_pending_self() -> None:
    memo = ParseMemo()
    pending = pod("a", "7")
    before = snapshot_from_objects([pending], parsers=memo.parsers).pods[0]
    after = snapshot_from_objects([assumed_on(pending, "node-1")], parsers=memo.parsers).pods[0]
    assert before.node_name is None
    assert after.node_name == "node-1"


def test_entries_unused_for_a_cycle_are_dropped() -> None:
    memo = ParseMemo()
    calls = counting(memo)
    snapshot_from_objects([pod("a", "1")], parsers=memo.parsers)
    memo.rotate()
    snapshot_from_objects([], parsers=memo.parsers)
    memo.rotate()
    snapshot_from_objects([pod("a", "1")], parsers=memo.parsers)
    assert calls == ["a@1", "a@1"]


def test_objects_without_a_resource_version_are_always_parsed() -> None:
    memo = ParseMemo()
    calls = counting(memo)
    handmade = pod("a", "")
    snapshot_from_objects([handmade], parsers=memo.parsers)
    snapshot_from_objects([handmade], parsers=memo.parsers)
    assert calls == ["a@", "a@"]
