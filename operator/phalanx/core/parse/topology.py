"""NetworkTopology -> TopologySpec, and PriorityClass -> PriorityClassInfo."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.core.model.inputs import (
    PREEMPT_LOWER_PRIORITY,
    PREEMPT_NEVER,
    PriorityClassInfo,
    TopologyLevel,
    TopologySpec,
)
from phalanx.core.model.names import HOSTNAME_LABEL
from phalanx.core.parse.fields import Reader


def parse_network_topology(obj: Mapping[str, Any]) -> TopologySpec:
    reader = Reader("NetworkTopology", obj, namespaced=False)
    raw = reader.items("spec.levels")
    if not raw:
        raise reader.error("spec.levels", "missing")
    levels = tuple(_level(reader, i, level) for i, level in enumerate(raw))
    names = [level.name for level in levels]
    if len(set(names)) != len(names):
        raise reader.error("spec.levels", f"level names must be unique: {names}")
    for level in levels[:-1]:
        if HOSTNAME_LABEL in level.node_labels:
            raise reader.error("spec.levels", f"{HOSTNAME_LABEL} may only be in the last level")
    return TopologySpec(name=reader.name, levels=levels)


def _level(reader: Reader, index: int, level: Any) -> TopologyLevel:
    field = f"spec.levels[{index}]"
    if not isinstance(level, Mapping) or not isinstance(level.get("name"), str):
        raise reader.error(f"{field}.name", "missing")
    labels = level.get("nodeLabels")
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) for x in labels):
        raise reader.error(f"{field}.nodeLabels", "expected a non-empty list of label keys")
    return TopologyLevel(name=level["name"], node_labels=tuple(labels))


def parse_priority_class(obj: Mapping[str, Any]) -> PriorityClassInfo:
    reader = Reader("PriorityClass", obj, namespaced=False)
    value = reader.get("value")
    if isinstance(value, bool) or not isinstance(value, int):
        raise reader.error("value", f"expected an integer, got {value!r}")
    policy = reader.string("preemptionPolicy", PREEMPT_LOWER_PRIORITY)
    if policy not in (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER):
        message = f"expected {PREEMPT_LOWER_PRIORITY} or {PREEMPT_NEVER}, got {policy!r}"
        raise reader.error("preemptionPolicy", message)
    return PriorityClassInfo(
        name=reader.name,
        value=value,
        global_default=reader.boolean("globalDefault", False),
        preemption_policy=policy or PREEMPT_LOWER_PRIORITY,
    )
