"""What the operator last reported on a PodGroup: `status.phase` and the nodes of
`status.placement`. Phalanx writes these, not the user, so anything malformed reads as
nothing reported rather than failing the group. They are what decides a partial gang's
release (core/admission/partial.py): its phase says whether it ever ran, the placement names the
nodes a failed node took pods from after those pods are gone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def read_phase(obj: Mapping[str, Any]) -> str:
    """The reported phase; "Pending" when none was reported yet."""
    phase = _status(obj).get("phase", "Pending")
    return phase if isinstance(phase, str) else ""


def read_placed_nodes(obj: Mapping[str, Any]) -> tuple[str, ...]:
    placement = _status(obj).get("placement")
    nodes = placement.get("nodes") if isinstance(placement, Mapping) else None
    if not isinstance(nodes, list):
        return ()
    return tuple(node for node in nodes if isinstance(node, str))


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


# Kubernetes' PodGroup has no phase; its scheduling condition stays True once the group was
# placed whole (PodGroupInitiallyScheduled in v1beta1, PodGroupScheduled in v1alpha2).
_SCHEDULED_CONDITIONS = frozenset({"PodGroupInitiallyScheduled", "PodGroupScheduled"})


def read_ran_whole(obj: Mapping[str, Any]) -> bool:
    """Kubernetes' PodGroup says it was scheduled (placed whole) once."""
    conditions = _status(obj).get("conditions")
    return any(
        isinstance(condition, Mapping) and condition.get("type") in _SCHEDULED_CONDITIONS
        and condition.get("status") == "True"
        for condition in (conditions if isinstance(conditions, list) else ()))
