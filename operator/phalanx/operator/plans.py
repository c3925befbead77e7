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

import asyncio
import dataclasses
import enum
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from phalanx.operator.cache import Body
from phalanx.operator.pods import is_bound, is_deleting, is_gated, wants_phalanx


@dataclasses.dataclass(frozen=True)
class Plan:
    """`devices`: pod key -> the GPU devices chosen for it (the gpu-index annotation's
    text), for the pods that take GPUs: a restarted operator finishing the plan writes
    the same devices the pods already bound were planned with."""

    id: str
    pods: Mapping[str, str]  # pod key -> node
    devices: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def status(self, replacing: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The plan as a status field for a merge patch; pods of a plan it replaces that
        are not in this one are removed explicitly (a merge patch merges maps)."""
        field: dict[str, Any] = {"id": self.id, "pods": _replacing(
            (replacing or {}).get("pods"), self.pods)}
        old_devices = (replacing or {}).get("devices")
        if self.devices or old_devices:
            field["devices"] = _replacing(old_devices, self.devices)
        return field


def _replacing(old: Any, new: Mapping[str, str]) -> dict[str, str | None]:
    entries: dict[str, str | None] = {key: None for key in old or {} if key not in new}
    entries.update(new)
    return entries


def decode_plan(group: Body) -> Plan | None:
    """The plan in a PodGroup's status, or None (absent or unreadable: no plan)."""
    raw = (group.get("status") or {}).get("plan")
    if not isinstance(raw, Mapping):
        return None
    try:
        pods = {str(k): str(v) for k, v in dict(raw["pods"]).items() if v is not None}
        chosen = dict(raw.get("devices") or {})
        devices = {str(k): str(v) for k, v in chosen.items() if v is not None and k in pods}
        return Plan(str(raw["id"]), pods, devices)
    except (ValueError, KeyError, TypeError):
        return None


class LeftoverAction(enum.StrEnum):
    """What to do with a plan a previous leader left on a PodGroup."""

    DONE = "done"  # every planned pod is placed or gone: only the status field is left
    DROP = "drop"  # nothing placed yet, or a planned node vanished: plan afresh
    FINISH = "finish"  # some placed: place the rest on their planned nodes


@dataclasses.dataclass(frozen=True)
class Resolution:
    action: LeftoverAction
    remaining: Mapping[str, str]  # pod key -> node, for FINISH


def resolve(plan: Plan, pods: Mapping[str, Body], nodes: Collection[str]) -> Resolution:
    live = {k: pods[k] for k in plan.pods if k in pods and not is_deleting(pods[k])}
    placed = [k for k, pod in live.items() if not _waiting(pod)]
    remaining = {k: plan.pods[k] for k, pod in live.items() if _waiting(pod)}
    if not remaining:
        return Resolution(LeftoverAction.DONE, {})
    if not placed or any(node not in nodes for node in remaining.values()):
        return Resolution(LeftoverAction.DROP, {})
    return Resolution(LeftoverAction.FINISH, remaining)


def _waiting(pod: Body) -> bool:
    """Still for Phalanx to place: unbound and gated by us or naming our scheduler."""
    return not is_bound(pod) and (is_gated(pod) or wants_phalanx(pod))


def new_plan_id() -> str:
    return uuid.uuid4().hex[:12]


class PlanBook:
    """Every plan this process knows, in one place (nominations will join it).

    A plan lives from the cycle that decides its gang until the gang's writes end: the
    group's status write carries it (and resolves the plan's `recorded` future, so nothing
    is bound before it landed), and the first status write after the writes end removes
    it. A plan found on a PodGroup that this process did not write is a leftover of a
    previous leader, handed out once by `leftovers`.
    """

    def __init__(self, new_id: Callable[[], str] = new_plan_id) -> None:
        self._new_id = new_id
        self._plans: dict[str, Plan] = {}  # group -> plan of its gang while it is written
        self._recording: dict[str, asyncio.Future[bool]] = {}  # this cycle's new plans
        self._known: set[str] = set()  # ids of plans written or taken over here

    def leftovers(self, groups: Iterable[Body]) -> list[tuple[Body, Plan]]:
        """Plans on the groups that this process did not write, each reported once."""
        found = [(g, plan) for g in groups
                 if (plan := decode_plan(g)) is not None and plan.id not in self._known]
        self._known.update(plan.id for _, plan in found)
        return found

    def start(
        self, key: str, assignments: Mapping[str, str], devices: Mapping[str, str] | None = None
    ) -> tuple[Plan, asyncio.Future[bool]]:
        """A new plan for the gang of `key`; the future says whether its status write landed."""
        plan = Plan(self._new_id(), dict(assignments), dict(devices or {}))
        self.hold(key, plan)
        recorded = asyncio.get_running_loop().create_future()
        self._recording[key] = recorded
        return plan, recorded

    def hold(self, key: str, plan: Plan) -> None:
        """Keep `plan` in the group's status while its pods are written."""
        self._plans[key] = plan
        self._known.add(plan.id)

    def release(self, key: str, plan: Plan) -> None:
        """The gang's writes ended: the next status write removes the plan."""
        if self._plans.get(key) is plan:
            del self._plans[key]

    def recording(self, key: str) -> asyncio.Future[bool] | None:
        """The future of a plan new this cycle, once: its status write must resolve it."""
        return self._recording.pop(key, None)

    def end_cycle(self) -> None:
        """Plans whose group had no status write this cycle (it was deleted) are not
        recorded: their gangs are not placed."""
        for recorded in self._recording.values():
            if not recorded.done():
                recorded.set_result(False)
        self._recording.clear()

    def status_field(self, key: str, group: Body, desired: dict[str, Any]) -> None:
        """The plan of a gang being written stays in `desired`; any other is removed."""
        shown = (group.get("status") or {}).get("plan")
        plan = self._plans.get(key)
        if plan is not None:
            old = shown if isinstance(shown, Mapping) and shown.get("id") != plan.id else None
            desired["plan"] = plan.status(replacing=old)
        elif shown:
            desired["plan"] = None
