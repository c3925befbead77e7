"""A KubeRay RayCluster's gang: its head and its worker groups' pods, one PodGroup.

KubeRay's own gang integration (ray-operator v1.5, batch scheduler Volcano) sizes its
PodGroup the same way: the head plus, when Ray's autoscaler is on
(`enableInTreeAutoscaling`), each worker group's `minReplicas`; when it is off, each
group's `replicas` as KubeRay reconciles them (kept within minReplicas..maxReplicas), since
nothing will scale the group afterwards. Every group counts `numOfHosts` pods per replica,
a suspended group none. Workers above the gang (those Ray's autoscaler adds) join the same
PodGroup as elastic members: placed one at a time next to the gang, never waited for.

The gang's roles are the head (KubeRay labels it `ray.io/group: headgroup`) and each
worker group by its name (`ray.io/group`), so the pods that must start together are the
head and each group's minimum, whichever pods exist beyond them. A RayJob gets its gang
through the RayCluster it creates: KubeRay copies the RayJob's labels and annotations
(queue, topology) onto that RayCluster, which it owns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.core.model.quantity import MAX_INT32
from phalanx.core.parse.fields import Reader
from phalanx.core.parse.membership import RAY_HEAD_GROUP
from phalanx.workloads.gangs import (
    MAX_ROLE_NAME,
    MAX_ROLES,
    ROLE_NAME,
    Gang,
    count,
    mapping_in,
    optional_count,
)


def raycluster_gangs(reader: Reader) -> list[Gang]:
    """One gang: the head and every worker group's part (see the module)."""
    autoscaled = reader.boolean("spec.enableInTreeAutoscaling", False)
    templates = [reader.mapping("spec.headGroupSpec.template")]
    roles: dict[str, int] = {RAY_HEAD_GROUP: 1}
    for i, group in enumerate(reader.items("spec.workerGroupSpecs")):
        where = f"spec.workerGroupSpecs[{i}]"
        if not isinstance(group, Mapping):
            raise reader.error(where, "expected an object")
        name = _group_name(reader, group, where)
        templates.append(mapping_in(reader, group, where, "template"))
        pods = _gang_pods(reader, group, where, autoscaled)
        if pods:
            roles[name] = roles.get(name, 0) + pods
    total = sum(roles.values())
    named = tuple(roles.items()) if len(roles) <= MAX_ROLES else ((RAY_HEAD_GROUP, 1),)
    return [Gang(None, total, tuple(templates), named)]


def _group_name(reader: Reader, group: Mapping[str, Any], where: str) -> str:
    """Its pods' label `ray.io/group`, so it must be a label value (and a role's name)."""
    name = group.get("groupName")
    if not isinstance(name, str) or not ROLE_NAME.match(name) or len(name) > MAX_ROLE_NAME:
        message = f"expected a label value (at most {MAX_ROLE_NAME} characters), got {name!r}"
        raise reader.error(f"{where}.groupName", message)
    return name


def _gang_pods(reader: Reader, group: Mapping[str, Any], where: str, autoscaled: bool) -> int:
    """The group's pods in the gang: its minimum when autoscaled, else its replicas as
    KubeRay reconciles them (utils.GetWorkerGroupDesiredReplicas); times numOfHosts."""
    if group.get("suspend") is True:
        return 0
    low = count(reader, group, where, "minReplicas", default=0)
    high = count(reader, group, where, "maxReplicas", default=MAX_INT32)
    hosts = count(reader, group, where, "numOfHosts")
    replicas = optional_count(reader, group, where, "replicas")
    wanted = low if autoscaled or replicas is None or replicas < low else replicas
    return min(wanted, high) * hosts
