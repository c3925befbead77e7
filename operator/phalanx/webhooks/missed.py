"""Pods the mutating webhook should have sent to Phalanx but did not see (pure).

The pod webhook fails open (failurePolicy Ignore): while Phalanx is down or its
certificate is wrong, a gang's pods are created as their workload wrote them, for
kube-scheduler, which places them one by one, outside the gang. The operator finds such
pods among those waiting, a pod of a gang it manages (it names a PodGroup, or its labels
point at a workload's PodGroup: `core.parse.membership.implied_groups`) that is neither
ours nor gated, and says so on the pod and its PodGroup: Phalanx never takes a pod away
from kube-scheduler by itself, deleting it (its controller makes it again, through the
webhook) is the user's call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from phalanx.core.model.names import (
    COMPONENT,
    GANG_GATE,
    GROUP_LABEL,
    MANAGED_BY_LABEL,
    SCHEDULER_NAME,
    key_of,
)
from phalanx.core.parse.membership import implied_groups
from phalanx.webhooks.names import EXCLUDED_NAMESPACES, MUTATING_CONFIGURATION
from phalanx.webhooks.pods import DEFAULT_SCHEDULER

Body = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Missed:
    pod: Body
    group: Body


def missed_pods(pods: Iterable[Body], groups: Mapping[str, Body]) -> list[Missed]:
    """`groups`: Phalanx PodGroups by `namespace/name`."""
    found = []
    for pod in pods:
        if not _waiting_for_kube_scheduler(pod):
            continue
        group = _gang_of(pod, groups)
        if group is not None:
            found.append(Missed(pod, group))
    return found


def pod_message(group: Body) -> str:
    return (f"created without schedulerName {SCHEDULER_NAME} or the gate {GANG_GATE}, though "
            f"it belongs to gang {_name(group)}: the admission webhook "
            f"{MUTATING_CONFIGURATION} was not reached when it was created (it lets pods "
            "through while Phalanx is down or unreachable), so kube-scheduler places it "
            "alone, outside the gang; delete it and its controller creates it again, "
            "through the webhook")


def group_message(pods: list[Body]) -> str:
    names = ", ".join(sorted(_name(p) for p in pods)[:3])
    more = f" and {len(pods) - 3} more" if len(pods) > 3 else ""
    return (f"{len(pods)} pod(s) of this gang ({names}{more}) were created without the "
            f"admission webhook {MUTATING_CONFIGURATION} (Phalanx was down or unreachable): "
            "kube-scheduler places them one by one, outside the gang; delete them so their "
            "controller creates them again")


def _waiting_for_kube_scheduler(pod: Body) -> bool:
    meta, spec = _mapping(pod.get("metadata")), _mapping(pod.get("spec"))
    if spec.get("nodeName") or meta.get("deletionTimestamp"):
        return False
    if meta.get("namespace") in EXCLUDED_NAMESPACES:
        return False
    if _mapping(pod.get("status")).get("phase", "Pending") != "Pending":
        return False
    if (spec.get("schedulerName") or DEFAULT_SCHEDULER) != DEFAULT_SCHEDULER:
        return False
    gates = spec.get("schedulingGates") or []
    return not any(isinstance(g, Mapping) and g.get("name") == GANG_GATE for g in gates)


def _gang_of(pod: Body, groups: Mapping[str, Body]) -> Body | None:
    meta = _mapping(pod.get("metadata"))
    labels = _mapping(meta.get("labels"))
    namespace = str(meta.get("namespace"))
    named = labels.get(GROUP_LABEL)
    if named:
        return groups.get(key_of(namespace, str(named)))
    for name in implied_groups({str(k): str(v) for k, v in labels.items()}):
        group = groups.get(key_of(namespace, name))
        if group is not None and _workload_gang(group):
            return group
    return None


def _workload_gang(group: Body) -> bool:
    labels = _mapping(_mapping(group.get("metadata")).get("labels"))
    return labels.get(MANAGED_BY_LABEL) == COMPONENT


def _name(obj: Body) -> str:
    return str(_mapping(obj.get("metadata")).get("name"))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
