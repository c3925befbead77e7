"""The gangs inside one workload, by kind: how many pods must start together.

Each function reads only the workload's own spec (the pods its controller will create),
never the cluster. A count of 0 (a Job with parallelism 0) means no gang.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from phalanx.core.model.names import GANG_SCOPE_ANNOTATION, MIN_MEMBER_ANNOTATION
from phalanx.core.model.quantity import MAX_INT32, whole_number
from phalanx.core.parse.fields import Reader
from phalanx.core.parse.membership import TRAINER_NODE_JOB

PER_REPLICATED_JOB = "replicated-job"
MAX_LWS_GROUPS = 150_000
"""Kubernetes' tested limit of pods in a cluster (its scalability thresholds), so of
groups in a LeaderWorkerSet; the API allows 2^31-1, and writing that many PodGroups
would stall every cycle."""
MAX_ROLES = 16  # the PodGroup CRD's spec.roles maxItems
ROLE_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")  # its roles[].name
MAX_ROLE_NAME = 63


@dataclass(frozen=True, slots=True)
class Gang:
    """`part` tells gangs of one workload apart (a replicated job, an LWS group index);
    `templates` are the pod templates of its pods (Kueue's topology annotations sit there);
    `roles`, (name, minimum) pairs, are the pods the gang must hold of each role its pods'
    labels give them (`membership.implied_role`), when some of its pods are elastic;
    `priority_class` the workload's own (before its templates')."""

    part: str | None
    min_member: int
    templates: tuple[Mapping[str, Any], ...] = ()
    roles: tuple[tuple[str, int], ...] = ()
    priority_class: str | None = None


def job_gangs(reader: Reader) -> list[Gang]:
    """Job: `parallelism` pods run at once (fewer if `completions` is smaller)."""
    count = job_pods(reader, reader.mapping("spec"), "spec")
    return [Gang(None, count, (reader.mapping("spec.template"),))] if count else []


def job_pods(reader: Reader, spec: Mapping[str, Any], where: str) -> int:
    parallelism = count(reader, spec, where, "parallelism")
    completions = optional_count(reader, spec, where, "completions")
    return parallelism if completions is None else min(parallelism, completions)


def jobset_gangs(reader: Reader) -> list[Gang]:
    """JobSet: all replicated jobs' pods together, or one gang per replicated job when
    annotated `scheduling.phalanx.io/gang-scope: replicated-job`."""
    scope = reader.labels("metadata.annotations").get(GANG_SCOPE_ANNOTATION)
    if scope not in (None, PER_REPLICATED_JOB):
        field = f"metadata.annotations[{GANG_SCOPE_ANNOTATION}]"
        raise reader.error(field, f"expected {PER_REPLICATED_JOB!r}, got {scope!r}")
    parts = [
        _replicated_job(reader, item, f"spec.replicatedJobs[{i}]")
        for i, item in enumerate(reader.items("spec.replicatedJobs"))
    ]
    if scope == PER_REPLICATED_JOB:
        return [gang for gang in parts if gang.min_member]
    total = sum(gang.min_member for gang in parts)
    templates = tuple(t for gang in parts for t in gang.templates)
    return [Gang(None, total, templates)] if total else []


def _replicated_job(reader: Reader, item: Any, where: str) -> Gang:
    if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
        raise reader.error(f"{where}.name", "missing")
    replicas = count(reader, item, where, "replicas")
    template = mapping_in(reader, item, where, "template")
    job_spec = mapping_in(reader, template, f"{where}.template", "spec")
    pods = replicas * job_pods(reader, job_spec, f"{where}.template.spec")
    pod_template = mapping_in(reader, job_spec, f"{where}.template.spec", "template")
    return Gang(item["name"], pods, (pod_template,))


def count(reader: Reader, data: Mapping[str, Any], where: str, key: str, default: int = 1) -> int:
    """A count Kubernetes defaults to 1 (parallelism, replicas), or to `default`."""
    found = optional_count(reader, data, where, key)
    return default if found is None else found


def optional_count(reader: Reader, data: Mapping[str, Any], where: str, key: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise reader.error(f"{where}.{key}", f"expected an integer >= 0, got {value!r}")
    if value > MAX_INT32:  # as `Reader.integer` says it
        raise reader.error(f"{where}.{key}", f"must fit in 32 bits: at most {MAX_INT32}")
    return value


def mapping_in(reader: Reader, data: Mapping[str, Any], where: str, key: str) -> Mapping[str, Any]:
    value = data.get(key) or {}
    if not isinstance(value, Mapping):
        raise reader.error(f"{where}.{key}", "expected an object")
    return value


def lws_gangs(reader: Reader) -> list[Gang]:
    """LeaderWorkerSet: one gang per group (`replicas` of them), a leader and its workers
    (`leaderWorkerTemplate.size` pods in all)."""
    replicas = reader.integer("spec.replicas", default=1, minimum=0) or 0
    if replicas > MAX_LWS_GROUPS:
        message = f"more than {MAX_LWS_GROUPS} groups (a PodGroup each), got {replicas}"
        raise reader.error("spec.replicas", message)
    size = reader.integer("spec.leaderWorkerTemplate.size", default=1, minimum=1) or 1
    templates = tuple(
        reader.mapping(f"spec.leaderWorkerTemplate.{name}")
        for name in ("leaderTemplate", "workerTemplate")
        if reader.get(f"spec.leaderWorkerTemplate.{name}") is not None
    )
    return [Gang(str(index), size, templates) for index in range(replicas)]


def pytorchjob_gangs(reader: Reader) -> list[Gang]:
    """PyTorchJob: the master and all workers, or `runPolicy.schedulingPolicy.minAvailable`."""
    specs = reader.mapping("spec.pytorchReplicaSpecs")
    total = 0
    templates = []
    for role in sorted(specs):
        where = f"spec.pytorchReplicaSpecs.{role}"
        total += reader.integer(f"{where}.replicas", default=1, minimum=0) or 0
        templates.append(reader.mapping(f"{where}.template"))
    minimum = reader.integer("spec.runPolicy.schedulingPolicy.minAvailable", minimum=1)
    count = total if minimum is None else minimum
    return [Gang(None, count, tuple(templates))] if count else []


def trainjob_gangs(reader: Reader) -> list[Gang]:
    """TrainJob: its trainer nodes (`spec.trainer.numNodes`), the pods of the JobSet's
    replicated job `node`; initializers run before them and are not part of the gang."""
    count = reader.integer("spec.trainer.numNodes", minimum=1) or min_member_override(reader)
    if count is None:
        message = (
            f"not set, and the runtime's default is not read here: set it, or the "
            f"annotation {MIN_MEMBER_ANNOTATION} (the pods of replicated job "
            f"{TRAINER_NODE_JOB!r} form the gang)"
        )
        raise reader.error("spec.trainer.numNodes", message)
    return [Gang(None, count)]


def min_member_override(reader: Reader) -> int | None:
    """`scheduling.phalanx.io/min-member: "N"`: fewer (or more) pods than the spec says."""
    text = reader.labels("metadata.annotations").get(MIN_MEMBER_ANNOTATION)
    if text is None:
        return None
    count = whole_number(text)
    if count is None or count < 1:
        field = f"metadata.annotations[{MIN_MEMBER_ANNOTATION}]"
        raise reader.error(field, f"expected an integer from 1 to {MAX_INT32}, got {text!r}")
    return count
