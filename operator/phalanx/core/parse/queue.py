"""Queue -> QueueInfo."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.core.model.inputs import QueueInfo
from phalanx.core.parse.fields import Reader
from phalanx.core.parse.usage import half_life, status_usage, usage_at


def parse_queue(obj: Mapping[str, Any]) -> QueueInfo:
    reader = Reader("Queue", obj, namespaced=False)
    state = reader.string("spec.state", "Open")
    if state not in ("Open", "Closed"):
        raise reader.error("spec.state", f"expected Open or Closed, got {state!r}")
    namespaces = reader.items("spec.namespaces")
    if not all(isinstance(n, str) for n in namespaces):
        raise reader.error("spec.namespaces", "expected a list of strings")
    return QueueInfo(
        name=reader.name,
        weight=reader.integer("spec.weight", 1, minimum=1) or 1,
        capability=_optional_resources(reader, "spec.capability"),
        guarantee=_optional_resources(reader, "spec.guarantee"),
        parent=reader.string("spec.parent") or None,
        reclaimable=reader.boolean("spec.reclaimable", True),
        open=state == "Open",
        namespaces=tuple(sorted(namespaces)),
        creation=reader.timestamp(),
        preempt_min_runtime_seconds=reader.integer("spec.preemptMinRuntimeSeconds", minimum=0),
        reclaim_min_runtime_seconds=reader.integer("spec.reclaimMinRuntimeSeconds", minimum=0),
        usage=status_usage(reader),
        usage_at=usage_at(reader),
        usage_half_life_seconds=half_life(reader),
        default_runtime_limit_seconds=reader.integer(
            "spec.defaultRuntimeLimitSeconds", minimum=1),
        max_runtime_limit_seconds=reader.integer("spec.maxRuntimeLimitSeconds", minimum=1),
    )


def _optional_resources(reader: Reader, path: str) -> dict[str, int] | None:
    return reader.resources(path) if reader.get(path) is not None else None
