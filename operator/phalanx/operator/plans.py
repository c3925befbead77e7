"""The intended placement of a gang, written with its first binding.

A crash between two bindings of a gang must not leave it partly placed for good. So the
whole plan (each pod's node and GPU devices) rides as an annotation on the gang's first
binding request, started before its others, and the API server copies it onto that pod
in the same write: the plan costs no write of its own. Written in the PodGroup's status
before the bindings, as it was, it cost a CRD status write per gang, and at bench-1000
(backlog) those 500 writes took the first 3.5 s of the run, while the bindings waiting
for them went at half the API server's rate. The other bindings do not wait for the
first one's reply: waiting spread a gang's bindings over more than 2 s for half the
gangs of bench-1000 (the operator's event loop answers late on a busy machine). So a
crash leaves a gang partly bound without its plan only if the first request was lost
while a later one landed; that gang is then what a failed binding leaves too, and the
partial-gang rule takes it (core/admission/partial.py: its missing pods are placed next
to the bound ones, or the gang is released after `partial_grace_seconds`).

A restarted operator (or a new leader) reads leftover plans first, from the bound pods
that carry one: a plan with some pods placed is finished (the rest go to the same nodes,
reserved before the cycle runs); one whose nodes are gone is dropped, and the bound pods
count as placed members of the group. A plan is history once its gang would have been
given up for partly bound (`partial_grace_seconds` after it was made): the annotation
stays on the pod, and is not acted on again. Pods are matched by uid, so a pod deleted
and made again under its name is not the plan's.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from phalanx.core.model.names import PLAN_ANNOTATION
from phalanx.operator.cache import Body
from phalanx.operator.pods import is_bound, is_deleting, is_gated, pod_key, wants_phalanx


@dataclasses.dataclass(frozen=True)
class Plan:
    """`pods`: pod key -> node; `uids`: pod key -> uid, when known; `devices`: pod key ->
    the GPU devices chosen for it (the gpu-index annotation's text), for the pods that
    take GPUs: a restarted operator finishing the plan writes the same devices the pods
    already bound were planned with. `at`: when it was made (epoch seconds)."""

    id: str
    group: str
    pods: Mapping[str, str]
    at: float
    devices: Mapping[str, str] = dataclasses.field(default_factory=dict)
    uids: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def annotation(self) -> str:
        """The plan as the annotation's text: compact JSON."""
        body: dict[str, Any] = {"id": self.id, "group": self.group, "at": round(self.at, 3),
                                "pods": dict(self.pods)}
        if self.devices:
            body["devices"] = dict(self.devices)
        if self.uids:
            body["uids"] = dict(self.uids)
        return json.dumps(body, separators=(",", ":"), sort_keys=True)


def decode_plan(pod: Body) -> Plan | None:
    """The plan a pod carries, or None (absent or unreadable: no plan)."""
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(PLAN_ANNOTATION)
    if not isinstance(text, str):
        return None
    try:
        raw = json.loads(text)
        pods = {str(k): str(v) for k, v in dict(raw["pods"]).items()}
        devices = {str(k): str(v) for k, v in dict(raw.get("devices") or {}).items()
                   if k in pods}
        uids = {str(k): str(v) for k, v in dict(raw.get("uids") or {}).items() if k in pods}
        return Plan(str(raw["id"]), str(raw["group"]), pods, float(raw["at"]), devices, uids)
    except (ValueError, KeyError, TypeError):
        return None


class LeftoverAction(enum.StrEnum):
    """What to do with a plan a previous leader left on a pod."""

    DONE = "done"  # every planned pod is placed or gone
    DROP = "drop"  # nothing placed (the plan's pod was deleted), or a planned node vanished
    FINISH = "finish"  # some placed: place the rest on their planned nodes


@dataclasses.dataclass(frozen=True)
class Resolution:
    action: LeftoverAction
    remaining: Mapping[str, str]  # pod key -> node, for FINISH


def resolve(plan: Plan, pods: Mapping[str, Body], nodes: Collection[str]) -> Resolution:
    live = {k: pods[k] for k in plan.pods if k in pods and not is_deleting(pods[k])
            and _same_pod(plan, k, pods[k])}
    placed = [k for k, pod in live.items() if not _waiting(pod)]
    remaining = {k: plan.pods[k] for k, pod in live.items() if _waiting(pod)}
    if not remaining:
        return Resolution(LeftoverAction.DONE, {})
    if not placed or any(node not in nodes for node in remaining.values()):
        return Resolution(LeftoverAction.DROP, {})
    return Resolution(LeftoverAction.FINISH, remaining)


def _same_pod(plan: Plan, key: str, pod: Body) -> bool:
    """The pod the plan was made for, not one made again under its name."""
    uid = plan.uids.get(key)
    return uid is None or str((pod.get("metadata") or {}).get("uid") or "") == uid


def _waiting(pod: Body) -> bool:
    """Still for Phalanx to place: unbound and gated by us or naming our scheduler."""
    return not is_bound(pod) and (is_gated(pod) or wants_phalanx(pod))


def new_plan_id() -> str:
    return uuid.uuid4().hex[:12]


class PlanBook:
    """Every plan this process knows, in one place.

    A plan lives from the cycle that decides its gang until the gang's writes end; the
    first binding carries it. A plan found on a bound pod that this process did not
    write, and younger than `finish_seconds`, is a leftover of a previous leader, handed
    out once by `leftovers`.
    """

    def __init__(self, finish_seconds: float, new_id: Callable[[], str] = new_plan_id) -> None:
        self._finish_seconds = finish_seconds
        self._new_id = new_id
        self._known: set[str] = set()  # ids of plans written or taken over here
        # pod key -> resourceVersion of the bound pods carrying a plan, as last read: a
        # plan is decoded once per change of its pod, not every cycle (at bench-1000 the
        # 500 plans' decoding every cycle was 3% of the operator's CPU)
        self._read: dict[str, str] = {}

    def leftovers(self, pods: Iterable[Body], now: float) -> list[Plan]:
        """Plans on bound pods that this process did not write, each reported once."""
        found: dict[str, Plan] = {}
        read: dict[str, str] = {}
        for pod in pods:
            meta = pod.get("metadata") or {}
            if PLAN_ANNOTATION not in (meta.get("annotations") or {}) or not is_bound(pod):
                continue
            key, version = pod_key(pod), str(meta.get("resourceVersion") or "")
            read[key] = version
            if version and self._read.get(key) == version:
                continue
            plan = decode_plan(pod)
            if (plan is not None and plan.id not in self._known and plan.id not in found
                    and now - plan.at < self._finish_seconds
                    and _same_pod(plan, key, pod)):
                found[plan.id] = plan
        self._read = read
        self._known.update(found)
        return list(found.values())

    def start(
        self,
        key: str,
        assignments: Mapping[str, str],
        devices: Mapping[str, str],
        pods: Mapping[str, Body],
        now: float,
    ) -> Plan:
        """A new plan for the gang of `key` (`pods`: the pods by key, for their uids)."""
        uids = {k: uid for k in assignments
                if (uid := str(((pods.get(k) or {}).get("metadata") or {}).get("uid") or ""))}
        plan = Plan(self._new_id(), key, dict(assignments), now, dict(devices), uids)
        self._known.add(plan.id)
        return plan
