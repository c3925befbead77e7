"""A Queue's fair-sharing fields: its half-life and the decayed usage in its status."""

from __future__ import annotations

from collections.abc import Mapping

from phalanx.core.model.errors import InvalidObject
from phalanx.core.parse.fields import Reader

MILLI = 1000.0  # status.usage is in whole units, the core counts milli-units
HALF_LIFE = "spec.fairSharing.usageHalfLifeSeconds"


def half_life(reader: Reader) -> float | None:
    """spec.fairSharing.usageHalfLifeSeconds; None: the global half-life."""
    value = reader.get(HALF_LIFE)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise reader.error(HALF_LIFE, f"expected seconds >= 0, got {value!r}")
    return float(value)


def status_usage(reader: Reader) -> dict[str, float]:
    """status.usage (resource -> decayed resource-seconds, in whole units) as the core's
    milli-unit-seconds. The operator writes it; an entry it cannot read is dropped rather
    than making the Queue invalid, since losing history only forgets the past."""
    raw = reader.get("status.usage")
    if not isinstance(raw, Mapping):
        return {}
    usage: dict[str, float] = {}
    for resource, value in raw.items():
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            usage[str(resource)] = float(value) * MILLI
    return usage


def usage_at(reader: Reader) -> float:
    """When status.usage was taken; 0 (long ago: that usage has decayed away) if unset
    or unreadable."""
    try:
        return reader.moment("status.usageUpdatedAt") or 0.0
    except InvalidObject:
        return 0.0
