"""Node -> NodeInfo."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.core.model.inputs import NodeInfo, Taint
from phalanx.core.model.names import GPU
from phalanx.core.parse.fields import Reader, is_mapping

MAX_GPUS = 4096
"""The most GPUs a node may have. The core keeps a list of each node's devices (which
pods share which GPU), so "nvidia.com/gpu: 9e18" would fill the memory; no node has
more than a few dozen, or a few hundred shares where a device plugin splits them."""


def parse_node(obj: Mapping[str, Any]) -> NodeInfo:
    """Allocatable (capacity if absent), labels, taints, cordon and readiness.

    A node whose status lists no conditions at all counts as Ready (hand-written
    manifests); one with conditions is Ready only if its Ready condition is "True".
    """
    reader = Reader("Node", obj, namespaced=False)
    allocatable = reader.mapping("status.allocatable")
    source = "status.allocatable" if allocatable else "status.capacity"
    resources = reader.resources(source)
    if resources.get(GPU, 0) > MAX_GPUS * 1000:
        message = f"more than {MAX_GPUS} GPUs on one node, got {resources[GPU] // 1000}"
        raise reader.error(f"{source}.{GPU}", message)
    return NodeInfo(
        name=reader.name,
        allocatable=resources,
        labels=reader.labels("metadata.labels"),
        taints=tuple(_taint(reader, i, t) for i, t in enumerate(reader.items("spec.taints"))),
        unschedulable=reader.boolean("spec.unschedulable", False),
        ready=_ready(reader),
    )


def _taint(reader: Reader, index: int, taint: Any) -> Taint:
    field = f"spec.taints[{index}]"
    if not is_mapping(taint) or not isinstance(taint.get("key"), str):
        raise reader.error(f"{field}.key", "missing")
    effect = taint.get("effect")
    if not isinstance(effect, str):
        raise reader.error(f"{field}.effect", "missing")
    return Taint(key=taint["key"], value=str(taint.get("value") or ""), effect=effect)


def _ready(reader: Reader) -> bool:
    conditions = reader.items("status.conditions")
    if not conditions:
        return True
    for condition in conditions:
        if is_mapping(condition) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False
