"""A queue-labelled workload -> the Phalanx PodGroups the operator creates for it.

Pure: the workload object in, PodGroup objects out (or InvalidObject naming the field
to fix). Each PodGroup is owned by the workload (ownerReference, so the garbage
collector deletes it with the workload) and named by `workload_group_name`, which is
how the workload's pods find it (`phalanx.core.parse.membership`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from phalanx.core.model.names import (
    COMPONENT,
    GROUP_VERSION,
    KUEUE_MAX_EXEC_TIME_LABEL,
    KUEUE_PREFERRED_ANNOTATION,
    KUEUE_REQUIRED_ANNOTATION,
    MANAGED_BY_LABEL,
    QUEUE_KEY,
)
from phalanx.core.model.quantity import MAX_INT32, whole_number
from phalanx.core.parse.annotations import (
    GroupAnnotations,
    annotation_field,
    read_group_annotations,
)
from phalanx.core.parse.fields import Reader
from phalanx.core.parse.membership import workload_group_name
from phalanx.workloads.gangs import (
    Gang,
    job_gangs,
    jobset_gangs,
    lws_gangs,
    min_member_override,
    pytorchjob_gangs,
    trainjob_gangs,
)
from phalanx.workloads.kinds import WORKLOAD_KINDS, WorkloadKind, kind_of
from phalanx.workloads.mpi import mpijob_gangs
from phalanx.workloads.ray import raycluster_gangs

_GANGS: dict[str, Callable[[Reader], list[Gang]]] = {
    "Job": job_gangs,
    "JobSet": jobset_gangs,
    "LeaderWorkerSet": lws_gangs,
    "PyTorchJob": pytorchjob_gangs,
    "TrainJob": trainjob_gangs,
    "RayCluster": raycluster_gangs,
    "MPIJob": mpijob_gangs,
}
_WORKLOAD_KIND_NAMES = frozenset(kind.kind for kind in WORKLOAD_KINDS)


def pod_groups_for(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The PodGroups a workload should have: none unless it carries the label
    `scheduling.phalanx.io/queue`, or when another workload controls it (a JobSet's
    Jobs, a TrainJob's JobSet: the parent's gang already holds their pods), or when it
    is a Job with `spec.scheduling` (Kubernetes 1.37): the Job controller makes its
    Workload and PodGroup, and that PodGroup is the gang Phalanx places."""
    kind = kind_of(str(obj.get("kind")))
    if kind is None:
        return []
    reader = Reader(kind.kind, obj, namespaced=True)
    queue = reader.labels("metadata.labels").get(QUEUE_KEY)
    if not queue or _controlled_by_workload(reader) or _scheduled_by_kubernetes(reader):
        return []
    settings = read_group_annotations(reader)
    override = min_member_override(reader)
    return [
        _pod_group(reader, kind, gang, queue, settings, override)
        for gang in _GANGS[kind.kind](reader)
    ]


def _scheduled_by_kubernetes(reader: Reader) -> bool:
    """A Job that declares its own gang (`spec.scheduling`, Kubernetes' Workload API) and
    that the Job controller makes the Workload of: one no controller owns (a CronJob's
    Job gets none, as kube-controller-manager 1.37 decides)."""
    owned = any(isinstance(ref, Mapping) and ref.get("controller") is True
                for ref in reader.items("metadata.ownerReferences"))
    return (reader.kind == "Job" and not owned
            and reader.mapping("spec").get("scheduling") is not None)


def _controlled_by_workload(reader: Reader) -> bool:
    return any(
        isinstance(ref, Mapping)
        and ref.get("controller") is True
        and ref.get("kind") in _WORKLOAD_KIND_NAMES
        for ref in reader.items("metadata.ownerReferences")
    )


def _pod_group(
    reader: Reader,
    kind: WorkloadKind,
    gang: Gang,
    queue: str,
    settings: GroupAnnotations,
    override: int | None,
) -> dict[str, Any]:
    min_member = override or gang.min_member
    if min_member > MAX_INT32:
        message = f"a gang of {min_member} pods, more than a PodGroup's minMember holds"
        raise reader.error("spec", message)
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
    if gang.roles and sum(minimum for _, minimum in gang.roles) <= min_member:
        spec["roles"] = [{"name": name, "minMember": minimum} for name, minimum in gang.roles]
    priority = settings.priority_class_name or gang.priority_class or _template_priority(gang)
    if priority:
        spec["priorityClassName"] = priority
    topology = _topology(reader, settings, gang)
    if topology:
        spec["topology"] = topology
    if settings.schedule_timeout_seconds is not None:
        spec["scheduleTimeoutSeconds"] = settings.schedule_timeout_seconds
    if settings.checkpoint_interval_seconds is not None:
        spec["checkpointIntervalSeconds"] = settings.checkpoint_interval_seconds
    limit = _runtime_limit(reader, settings, gang)
    if limit is not None:
        spec["runtimeLimitSeconds"] = limit
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "PodGroup",
        "metadata": {
            "name": workload_group_name(kind.prefix, reader.name, gang.part),
            "namespace": reader.namespace,
            "labels": {MANAGED_BY_LABEL: COMPONENT},
            "ownerReferences": [_owner(reader, kind)],
        },
        "spec": spec,
    }


def _runtime_limit(reader: Reader, settings: GroupAnnotations, gang: Gang) -> int | None:
    """The gang's runtime limit, the first of: the workload's annotation
    `scheduling.phalanx.io/runtime-limit-seconds`; Kueue's label
    `kueue.x-k8s.io/max-exec-time-seconds`; the Job's `spec.activeDeadlineSeconds` (a
    JobSet's: its gang's replicated jobs', the smallest); the smallest
    `spec.activeDeadlineSeconds` of the gang's pod templates. Kubernetes counts a Job's
    deadline from the Job's start and a pod's from the pod's, both no later than the gang's
    start, so each is an upper bound on how long the gang runs. Above a PodGroup's int32:
    that (68 years)."""
    if settings.runtime_limit_seconds is not None:
        return settings.runtime_limit_seconds
    kueue = _kueue_limit(reader)
    if kueue is not None:
        return kueue
    jobs = _job_deadlines(reader, gang)
    if jobs:
        return min(min(jobs), MAX_INT32)
    pods = [
        deadline
        for i, template in enumerate(gang.templates)
        if (deadline := _deadline(reader, template.get("spec"), f"pod templates[{i}].spec"))
        is not None
    ]
    return min(min(pods), MAX_INT32) if pods else None


def _kueue_limit(reader: Reader) -> int | None:
    text = reader.labels("metadata.labels").get(KUEUE_MAX_EXEC_TIME_LABEL)
    if text is None:
        return None
    seconds = whole_number(text)
    if seconds is None or seconds < 1:
        message = f"expected an integer from 1 to {MAX_INT32}, got {text!r}"
        raise reader.error(f"metadata.labels[{KUEUE_MAX_EXEC_TIME_LABEL}]", message)
    return seconds


def _job_deadlines(reader: Reader, gang: Gang) -> list[int]:
    """`activeDeadlineSeconds` of the Job, or of the gang's replicated jobs of a JobSet."""
    if reader.kind == "Job":
        found = _deadline(reader, reader.mapping("spec"), "spec")
        return [found] if found is not None else []
    if reader.kind != "JobSet":
        return []
    deadlines = []
    for i, item in enumerate(reader.items("spec.replicatedJobs")):
        if not isinstance(item, Mapping) or gang.part not in (None, item.get("name")):
            continue
        template = item.get("template")
        spec = template.get("spec") if isinstance(template, Mapping) else None
        found = _deadline(reader, spec, f"spec.replicatedJobs[{i}].template.spec")
        if found is not None:
            deadlines.append(found)
    return deadlines


def _deadline(reader: Reader, spec: Any, where: str) -> int | None:
    """`activeDeadlineSeconds` of a Job or pod spec: an integer >= 1 (as the API has it)."""
    value = spec.get("activeDeadlineSeconds") if isinstance(spec, Mapping) else None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        message = f"expected an integer >= 1, got {value!r}"
        raise reader.error(f"{where}.activeDeadlineSeconds", message)
    return value


def _owner(reader: Reader, kind: WorkloadKind) -> dict[str, Any]:
    uid = reader.string("metadata.uid")
    if not uid:
        raise reader.error("metadata.uid", "missing (only objects read from the API server)")
    api_version = reader.string("apiVersion") or kind.api_version
    return {
        "apiVersion": api_version,
        "kind": kind.kind,
        "name": reader.name,
        "uid": uid,
        "controller": True,
    }


def _template_priority(gang: Gang) -> str | None:
    for template in gang.templates:
        spec = template.get("spec")
        name = spec.get("priorityClassName") if isinstance(spec, Mapping) else None
        if isinstance(name, str) and name:
            return name
    return None


def _topology(reader: Reader, settings: GroupAnnotations, gang: Gang) -> dict[str, Any]:
    levels = {
        "required": settings.required,
        "preferred": settings.preferred,
        "requiredNodeLabel": _kueue(reader, gang, KUEUE_REQUIRED_ANNOTATION),
        "preferredNodeLabel": _kueue(reader, gang, KUEUE_PREFERRED_ANNOTATION),
    }
    chosen = {field: value for field, value in levels.items() if value}
    if len(chosen) > 1:
        message = f"these ask for different levels at once: {sorted(chosen)}; keep one"
        raise reader.error("metadata.annotations", message)
    topology: dict[str, Any] = dict(chosen)
    if settings.network_topology:
        topology["networkTopology"] = settings.network_topology
    if settings.sub_group is not None:
        sub = settings.sub_group
        topology["subGroup"] = {"size": sub.size, "required": sub.required}
    return topology


def _kueue(reader: Reader, gang: Gang, key: str) -> str | None:
    """Kueue's annotation, on the workload or on its pod templates (where Kueue reads it);
    one gang's templates must agree."""
    values = {reader.labels("metadata.annotations").get(key)}
    for template in gang.templates:
        metadata = template.get("metadata")
        annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
        if isinstance(annotations, Mapping):
            value = annotations.get(key)
            if value is not None and not isinstance(value, str):
                message = f"expected a node label key on a pod template, got {value!r}"
                raise reader.error(annotation_field(key), message)
            values.add(value)
    found = sorted(str(v) for v in values if v)
    if len(found) > 1:
        raise reader.error(annotation_field(key), f"the pod templates disagree: {found}")
    return found[0] if found else None
