"""The inputs preemption reads: PriorityClass preemptionPolicy, pod start time, and the
hold a PodGroup's status records (status.nominated)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from phalanx.core import InvalidObject, Nomination
from phalanx.core.parse import parse_pod, parse_pod_group, parse_priority_class


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def priority_class(**fields: Any) -> dict[str, Any]:
    return {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000, **fields}


def test_preemption_policy_defaults_to_preempting_lower_priority() -> None:
    assert parse_priority_class(priority_class()).preemption_policy == "PreemptLowerPriority"
    never = parse_priority_class(priority_class(preemptionPolicy="Never"))
    assert never.preemption_policy == "Never"


def test_unknown_preemption_policy_is_rejected_naming_the_field() -> None:
    with pytest.raises(InvalidObject) as raised:
        parse_priority_class(priority_class(preemptionPolicy="Sometimes"))
    assert raised.value.field == "preemptionPolicy"


def test_pod_start_time_is_read_from_status() -> None:
    obj = {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {"containers": [{"name": "c"}]},
        "status": {"phase": "Running", "startTime": "2026-11-30T01:00:00Z"},
    }
    assert parse_pod(obj).started_at == epoch("2026-11-30T01:00:00")
    del obj["status"]
    assert parse_pod(obj).started_at is None


def group_obj(status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ml"},
        "spec": {"minMember": 2},
    }
    if status is not None:
        obj["status"] = status
    return obj


def test_nomination_is_read_from_status_nominated() -> None:
    held = {
        "nodes": ["n2", "n1"],
        "reason": "Preempting",
        "since": "2026-11-30T01:00:00Z",
        "expires": "2026-11-30T01:05:00Z",
    }
    group = parse_pod_group(group_obj({"nominated": held}))
    assert group.nomination == Nomination(
        ("n1", "n2"), "Preempting", epoch("2026-11-30T01:00:00"), epoch("2026-11-30T01:05:00")
    )
    assert parse_pod_group(group_obj()).nomination is None


@pytest.mark.parametrize(
    "held",
    [
        {"nodes": "n1", "reason": "Preempting", "since": "2026-11-30T01:00:00Z",
         "expires": "2026-11-30T01:05:00Z"},
        {"nodes": ["n1"], "reason": "Because", "since": "2026-11-30T01:00:00Z",
         "expires": "2026-11-30T01:05:00Z"},
        {"nodes": ["n1"], "reason": "Reserved", "since": "yesterday",
         "expires": "2026-11-30T01:05:00Z"},
        {"nodes": ["n1"], "reason": "Reserved", "since": "2026-11-30T01:00:00Z"},
        "held",
    ],
)  # fmt: skip
def test_a_malformed_nomination_is_dropped_not_fatal(held: Any) -> None:
    group = parse_pod_group(group_obj({"nominated": held}))
    assert group.nomination is None
    assert group.min_member == 2


def pod_group(annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ml", "annotations": annotations or {}},
            "spec": {"minMember": 1, **spec}}  # fmt: skip


def test_a_checkpoint_is_read_from_the_annotation_and_the_interval_from_the_spec() -> None:
    group = parse_pod_group(pod_group(
        {"scheduling.phalanx.io/checkpointed-at": "2026-12-05T13:02:00Z"},
        checkpointIntervalSeconds=1800))  # fmt: skip
    assert group.checkpointed_at == epoch("2026-12-05T13:02:00")
    assert group.checkpoint_interval_seconds == 1800
    plain = parse_pod_group(pod_group())
    assert plain.checkpointed_at is None and plain.checkpoint_interval_seconds is None


@pytest.mark.parametrize("text", ["yesterday", "13:02", ""])
def test_a_malformed_checkpoint_is_refused_naming_the_annotation(text: str) -> None:
    with pytest.raises(InvalidObject) as raised:
        parse_pod_group(pod_group({"scheduling.phalanx.io/checkpointed-at": text}))
    assert raised.value.field == "metadata.annotations[scheduling.phalanx.io/checkpointed-at]"
    assert "RFC 3339" in str(raised.value)


def test_a_kubernetes_pod_group_declares_its_interval_by_annotation() -> None:
    obj = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
           "metadata": {"name": "g", "namespace": "ml", "annotations": {
               "scheduling.phalanx.io/checkpoint-interval-seconds": "900"}},
           "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}  # fmt: skip
    assert parse_pod_group(obj).checkpoint_interval_seconds == 900
    obj["metadata"]["annotations"]["scheduling.phalanx.io/checkpoint-interval-seconds"] = "0"
    with pytest.raises(InvalidObject):
        parse_pod_group(obj)


def test_a_queue_reads_its_minimum_runtimes() -> None:
    from phalanx.core.parse.queue import parse_queue

    queue = parse_queue({"kind": "Queue", "metadata": {"name": "q"},
                         "spec": {"preemptMinRuntimeSeconds": 600}})  # fmt: skip
    assert (queue.preempt_min_runtime_seconds, queue.reclaim_min_runtime_seconds) == (600, None)
