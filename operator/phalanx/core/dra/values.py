"""Quantities and versions as CEL values, and version attributes as text.

The CEL binding has no opaque types, so a quantity travels as {"__quantity__": milli}
and a version as {"__semver__": [major, minor, patch, pre...]}; these helpers are the
one place that knows the shapes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from phalanx.core.model.dra import Semver

QUANTITY = "__quantity__"
SEMVER = "__semver__"
_STRICT = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)
_LOOSE = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


def quantity_value(milli: int) -> dict[str, Any]:
    return {QUANTITY: milli}


def quantity_of(value: object) -> int:
    if isinstance(value, Mapping) and isinstance(value.get(QUANTITY), int):
        return int(value[QUANTITY])
    raise ValueError("not a quantity")


def semver_value(version: Semver) -> dict[str, Any]:
    return {SEMVER: [version.major, version.minor, version.patch, *version.pre]}


def _semver_from(value: Mapping[str, Any]) -> Semver:
    parts = value.get(SEMVER)
    if not isinstance(parts, list) or len(parts) < 3:
        raise ValueError("not a version")
    return Semver(int(parts[0]), int(parts[1]), int(parts[2]), tuple(parts[3:]))


def semver_of(text: str, normalize: bool = False) -> Semver | None:
    """Parse a semantic version: strict (semver 2.0, as upstream's attribute parsing), or
    with `normalize` also "v1", "1.2" and leading zeros (Kubernetes' semver(s, true))."""
    match = _STRICT.match(text)
    if match:
        return Semver(int(match[1]), int(match[2]), int(match[3]), _pre(match[4]))
    if not normalize:
        return None
    loose = _LOOSE.match(text)
    if not loose:
        return None
    return Semver(int(loose[1]), int(loose[2] or 0), int(loose[3] or 0), _pre(loose[4]))


def _pre(text: str | None) -> tuple[int | str, ...]:
    if not text:
        return ()
    return tuple(int(part) if part.isdigit() else part for part in text.split("."))


def compare_values(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    """-1, 0 or 1: two quantities or two versions (a quantity and a version: an error)."""
    if QUANTITY in a and QUANTITY in b:
        x, y = quantity_of(a), quantity_of(b)
        return (x > y) - (x < y)
    if SEMVER in a and SEMVER in b:
        p, q = _semver_from(a).key(), _semver_from(b).key()
        return (p > q) - (p < q)
    raise ValueError("compareTo needs two quantities or two versions")
