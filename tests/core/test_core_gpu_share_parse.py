"""GPU sharing annotations: read into the pod's ask, refused with a reason that its
group shows (never a dropped pod or a crash)."""

from __future__ import annotations

from typing import Any

import pytest
from core_builders import cycle, group, node, pod

from phalanx.core import run_cycle, snapshot_from_objects
from phalanx.core.model.status import Reason, StatusCode
from phalanx.core.parse import parse_pod

GPU = "nvidia.com/gpu"


def pod_obj(
    annotations: dict[str, str], requests: dict[str, Any] | None = None, **meta: Any
) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml", "annotations": annotations, **meta},
        "spec": {
            "schedulerName": "phalanx",
            "containers": [{"name": "c", "resources": {"requests": requests or {"cpu": "1"}}}],
        },
    }


@pytest.mark.parametrize(
    ("annotations", "milli", "memory"),
    [
        ({"scheduling.phalanx.io/gpu-fraction": "0.25"}, 250, 0),
        ({"scheduling.phalanx.io/gpu-fraction": ".5"}, 500, 0),
        ({"scheduling.phalanx.io/gpu-fraction": "0.0004"}, 1, 0),  # rounded up, never to 0
        ({"gpu-fraction": "0.1"}, 100, 0),  # KAI's
        ({"scheduling.phalanx.io/gpu-memory": "20Gi"}, 0, 20480),
        ({"scheduling.phalanx.io/gpu-memory": "1500Mi"}, 0, 1500),
        ({"gpu-memory": "2000"}, 0, 2000),  # KAI's: MiB
        ({"gpu-memory": "4Gi"}, 0, 4096),
    ],
)
def test_a_gpu_share_is_read_from_the_annotations(
    annotations: dict[str, str], milli: int, memory: int
) -> None:
    info = parse_pod(pod_obj(annotations))
    assert (info.gpu_milli, info.gpu_memory, info.invalid) == (milli, memory, "")
    assert GPU not in info.requests


@pytest.mark.parametrize(
    ("annotations", "requests", "says"),
    [
        ({"scheduling.phalanx.io/gpu-fraction": "0"}, None, "between 0 and 1"),
        ({"scheduling.phalanx.io/gpu-fraction": "-0.5"}, None, "between 0 and 1"),
        ({"scheduling.phalanx.io/gpu-fraction": "1"}, None, "between 0 and 1"),
        ({"scheduling.phalanx.io/gpu-fraction": "1.5"}, None, "between 0 and 1"),
        ({"scheduling.phalanx.io/gpu-fraction": "0.9999"}, None, "rounds to a whole GPU"),
        ({"scheduling.phalanx.io/gpu-fraction": "half"}, None, "expected a number"),
        ({"scheduling.phalanx.io/gpu-fraction": "nan"}, None, "between 0 and 1"),
        ({"gpu-fraction": "2"}, None, "between 0 and 1"),
        ({"scheduling.phalanx.io/gpu-memory": "0"}, None, "more than 0"),
        ({"scheduling.phalanx.io/gpu-memory": "lots"}, None, "memory quantity"),
        (
            {
                "scheduling.phalanx.io/gpu-fraction": "0.5",
                "scheduling.phalanx.io/gpu-memory": "1Gi",
            },
            None,
            "not both",
        ),
        ({"scheduling.phalanx.io/gpu-fraction": "0.5"}, {GPU: "1"}, "must not request"),
        ({"gpu-memory": "\u00b2"}, None, "expected a memory quantity"),  # was a ValueError
        # KAI's MiB past int32: was read as bytes (2,862 MiB), not refused
        ({"gpu-memory": "3000000000"}, None, "expected MiB"),
    ],
)
def test_an_ask_that_cannot_be_met_as_written_is_refused_with_the_reason(
    annotations: dict[str, str], requests: dict[str, Any] | None, says: str
) -> None:
    info = parse_pod(pod_obj(annotations, requests))
    assert says in info.invalid
    assert "metadata.annotations[" in info.invalid
    result = run_cycle(snapshot_from_objects([pod_obj(annotations, requests), _node()]))
    assert result.bindings == ()
    decision = result.groups[0]
    assert (decision.code, decision.reason) == (StatusCode.ERROR, Reason.INVALID_SPEC)
    assert decision.message.startswith("pod p: metadata.annotations[")


def test_one_invalid_pod_holds_back_its_whole_gang_and_the_group_names_it() -> None:
    good = pod("w-0", gpus=0, gpu_milli=500, group="g")
    bad = pod("w-1", gpus=0, group="g", invalid="metadata.annotations[x]: bad")
    extra = pod("w-2", gpus=0, gpu_milli=500, group="g")
    result = cycle(node("n", gpus=1), good, bad, extra, group("g", 1))
    assert result.bindings == ()
    assert result.decision("default/g").message == "pod w-1: metadata.annotations[x]: bad"


@pytest.mark.parametrize(
    ("text", "devices"),
    [
        ("3", (3,)), ("0,1,2,3", (0, 1, 2, 3)), (" 1, 2 ", (1, 2)), ("x", ()), ("1,,2", ()),
        ("", ()),
        # ValueError from int(), where isdigit() said yes
        ("\u00b2", ()), ("1,\u00b2", ()), ("9" * 30, ()),
    ],
)
def test_the_devices_written_on_a_pod_are_read_back(text: str, devices: tuple[int, ...]) -> None:
    info = parse_pod(pod_obj({"scheduling.phalanx.io/gpu-index": text}))
    assert info.gpu_devices == devices


def test_node_gpu_memory_comes_from_gpu_feature_discovery_labels() -> None:
    from phalanx.core.parse import parse_node

    info = parse_node(_node({"nvidia.com/gpu.memory": "81559"}))
    assert (info.gpu_count, info.gpu_memory) == (8, 81559)
    assert parse_node(_node({"nvidia.com/gpu.memory": "80GB"})).gpu_memory == 0
    assert parse_node(_node({"nvidia.com/gpu.memory": "\u00b2"})).gpu_memory == 0  # ValueError


def _node(labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": "n", "labels": labels or {}},
        "status": {"allocatable": {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}},
    }
