"""Runtime limits as the parsers read them (#31): a PodGroup's spec.runtimeLimitSeconds,
the annotation on Kubernetes' own PodGroup, and a Queue's default and maximum."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.core import InvalidObject
from phalanx.core.parse import parse_pod_group
from phalanx.core.parse.queue import parse_queue

ANNOTATION = "scheduling.phalanx.io/runtime-limit-seconds"


def pod_group(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ml"},
            "spec": {"minMember": 1, **spec}}  # fmt: skip


def upstream(annotations: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ml", "annotations": annotations},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}  # fmt: skip


def queue(**spec: Any) -> dict[str, Any]:
    return {"kind": "Queue", "metadata": {"name": "q"}, "spec": spec}


def test_a_pod_group_reads_its_runtime_limit_from_the_spec() -> None:
    assert parse_pod_group(pod_group(runtimeLimitSeconds=3600)).runtime_limit_seconds == 3600
    assert parse_pod_group(pod_group()).runtime_limit_seconds is None


@pytest.mark.parametrize("value", [0, -5, "3600", 1.5, True])
def test_a_runtime_limit_below_one_second_or_not_an_integer_is_refused(value: Any) -> None:
    with pytest.raises(InvalidObject) as raised:
        parse_pod_group(pod_group(runtimeLimitSeconds=value))
    assert raised.value.field == "spec.runtimeLimitSeconds"


def test_a_kubernetes_pod_group_declares_its_limit_by_annotation() -> None:
    assert parse_pod_group(upstream({ANNOTATION: "7200"})).runtime_limit_seconds == 7200
    assert parse_pod_group(upstream({})).runtime_limit_seconds is None


@pytest.mark.parametrize("text", ["0", "-1", "1h", "", "99999999999"])
def test_a_malformed_limit_annotation_is_refused_naming_it(text: str) -> None:
    with pytest.raises(InvalidObject) as raised:
        parse_pod_group(upstream({ANNOTATION: text}))
    assert raised.value.field == f"metadata.annotations[{ANNOTATION}]"
    assert "expected an integer from" in str(raised.value)


def test_a_queue_reads_its_default_and_maximum_runtime_limits() -> None:
    read = parse_queue(queue(defaultRuntimeLimitSeconds=3600, maxRuntimeLimitSeconds=86400))
    assert (read.default_runtime_limit_seconds, read.max_runtime_limit_seconds) == (3600, 86400)
    plain = parse_queue(queue())
    assert (plain.default_runtime_limit_seconds, plain.max_runtime_limit_seconds) == (None, None)


@pytest.mark.parametrize("field", ["defaultRuntimeLimitSeconds", "maxRuntimeLimitSeconds"])
def test_a_queue_limit_of_zero_is_refused_naming_the_field(field: str) -> None:
    with pytest.raises(InvalidObject) as raised:
        parse_queue(queue(**{field: 0}))
    assert raised.value.field == f"spec.{field}"
