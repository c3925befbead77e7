"""The intended placement of a gang, in its PodGroup's status before any pod is placed.

The plan rides on the status write that reports the placement (and is removed by the
next status write once the pods are bound): a PodGroup write costs the API server as
much as two or three Events, so it gets no writes of its own.

A restarted operator reads leftover plans first: a plan with some pods already placed
is finished (the rest go to the same nodes, reserved before the cycle runs); a plan
with none placed is dropped and the group planned afresh; a plan whose nodes are gone
is dropped too, and the bound pods count as placed members of the group.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Collection, Mapping
from typing import Any

from phalanx.operator.cache import Body
from phalanx.operator.pods import is_bound, is_deleting, is_gated, wants_phalanx


@dataclasses.dataclass(frozen=True)
class Plan:
    id: str
    pods: Mapping[str, str]  # pod key -> node

    def status(self, replacing: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The plan as a status field for a merge patch; pods of a plan it replaces that
        are not in this one are removed explicitly (a merge patch merges maps)."""
        old = (replacing or {}).get("pods") or {}
        pods: dict[str, str | None] = {key: None for key in old if key not in self.pods}
        pods.update(self.pods)
        return {"id": self.id, "pods": pods}


def decode_plan(group: Body) -> Plan | None:
    """The plan in a PodGroup's status, or None (absent or unreadable: no plan)."""
    raw = (group.get("status") or {}).get("plan")
    if not isinstance(raw, Mapping):
        return None
    try:
        pods = {str(k): str(v) for k, v in dict(raw["pods"]).items() if v is not None}
        return Plan(str(raw["id"]), pods)
    except (ValueError, KeyError, TypeError):
        return None


class Outcome(enum.StrEnum):
    DONE = "done"  # every planned pod is placed or gone: only the annotation is left
    DROP = "drop"  # nothing placed yet, or a planned node vanished: plan afresh
    FINISH = "finish"  # some placed: place the rest on their planned nodes


@dataclasses.dataclass(frozen=True)
class Resolution:
    outcome: Outcome
    remaining: Mapping[str, str]  # pod key -> node, for FINISH


def resolve(plan: Plan, pods: Mapping[str, Body], nodes: Collection[str]) -> Resolution:
    live = {k: pods[k] for k in plan.pods if k in pods and not is_deleting(pods[k])}
    placed = [k for k, pod in live.items() if not _waiting(pod)]
    remaining = {k: plan.pods[k] for k, pod in live.items() if _waiting(pod)}
    if not remaining:
        return Resolution(Outcome.DONE, {})
    if not placed or any(node not in nodes for node in remaining.values()):
        return Resolution(Outcome.DROP, {})
    return Resolution(Outcome.FINISH, remaining)


def _waiting(pod: Body) -> bool:
    """Still for Phalanx to place: unbound and gated by us or naming our scheduler."""
    return not is_bound(pod) and (is_gated(pod) or wants_phalanx(pod))
