"""Phalanx's PodGroup settings written as annotations, where no spec field can hold them.

Kubernetes' own PodGroup (`scheduling.k8s.io`) and the workloads that get a gang
automatically (Job, JobSet, ...) have no field for a queue, a preferred level or a
sub-group; the same annotations carry them on both, read here once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from phalanx.core.model.inputs import SubGroupSpec
from phalanx.core.model.names import (
    CHECKPOINT_INTERVAL_ANNOTATION,
    CHECKPOINTED_AT_ANNOTATION,
    DNS_LABEL,
    DNS_LABEL_MAX,
    NETWORK_TOPOLOGY_ANNOTATION,
    PREFERRED_ANNOTATION,
    PRIORITY_CLASS_ANNOTATION,
    REQUIRED_ANNOTATION,
    RUNTIME_LIMIT_ANNOTATION,
    SCHEDULE_TIMEOUT_ANNOTATION,
    SUBGROUP_LEVEL_ANNOTATION,
    SUBGROUP_SIZE_ANNOTATION,
)
from phalanx.core.model.quantity import MAX_INT32, whole_number
from phalanx.core.parse.fields import Reader


@dataclass(frozen=True, slots=True)
class GroupAnnotations:
    """What the annotations say; None where they say nothing."""

    priority_class_name: str | None = None
    network_topology: str | None = None
    required: str | None = None
    preferred: str | None = None
    sub_group: SubGroupSpec | None = None
    schedule_timeout_seconds: int | None = None
    checkpoint_interval_seconds: int | None = None
    checkpointed_at: float | None = None
    runtime_limit_seconds: int | None = None

    @property
    def has_topology(self) -> bool:
        return bool(self.network_topology or self.required or self.preferred or self.sub_group)


def annotation_field(key: str) -> str:
    """How an error names an annotation: `metadata.annotations[KEY]`."""
    return f"metadata.annotations[{key}]"


def read_group_annotations(reader: Reader) -> GroupAnnotations:
    annotations = reader.labels("metadata.annotations")
    required = _level(reader, annotations, REQUIRED_ANNOTATION)
    preferred = _level(reader, annotations, PREFERRED_ANNOTATION)
    if required and preferred:
        message = f"set {REQUIRED_ANNOTATION} or {PREFERRED_ANNOTATION}, not both"
        raise reader.error(annotation_field(PREFERRED_ANNOTATION), message)
    return GroupAnnotations(
        priority_class_name=annotations.get(PRIORITY_CLASS_ANNOTATION) or None,
        network_topology=annotations.get(NETWORK_TOPOLOGY_ANNOTATION) or None,
        required=required,
        preferred=preferred,
        sub_group=_sub_group(reader, annotations),
        schedule_timeout_seconds=_seconds(reader, annotations, SCHEDULE_TIMEOUT_ANNOTATION),
        checkpoint_interval_seconds=_positive(reader, annotations, CHECKPOINT_INTERVAL_ANNOTATION),
        checkpointed_at=read_checkpointed_at(reader),
        runtime_limit_seconds=_positive(reader, annotations, RUNTIME_LIMIT_ANNOTATION),
    )


def read_checkpointed_at(reader: Reader) -> float | None:
    """When the group's job last saved its progress (RFC 3339, no time zone: UTC), as
    epoch seconds; a PodGroup of Phalanx's own reads this annotation alone."""
    annotations = reader.labels("metadata.annotations")
    return _moment(reader, annotations, CHECKPOINTED_AT_ANNOTATION)


_LEVEL_NAME = re.compile(DNS_LABEL)  # the CRDs' pattern for a level name


def _level(reader: Reader, annotations: Mapping[str, str], key: str) -> str | None:
    """A level name, as the CRDs allow one (so the PodGroup made of a workload with it
    is not refused by the API server, a refusal nobody would see on the workload)."""
    name = annotations.get(key) or None
    if name is not None and (len(name) > DNS_LABEL_MAX or not _LEVEL_NAME.fullmatch(name)):
        message = f"expected a level name (a-z, 0-9 and '-', at most {DNS_LABEL_MAX}), got {name!r}"
        raise reader.error(annotation_field(key), message)
    return name


def _seconds(reader: Reader, annotations: Mapping[str, str], key: str) -> int | None:
    """A whole number of seconds >= 0 (what `spec.scheduleTimeoutSeconds` holds)."""
    text = annotations.get(key)
    if text is None:
        return None
    seconds = whole_number(text)
    if seconds is None:
        message = f"expected an integer from 0 to {MAX_INT32}, got {text!r}"
        raise reader.error(annotation_field(key), message)
    return seconds


def _positive(reader: Reader, annotations: Mapping[str, str], key: str) -> int | None:
    """A whole number of seconds >= 1 (as the CRD's field: a checkpoint interval, a
    runtime limit)."""
    seconds = _seconds(reader, annotations, key)
    if seconds == 0:
        message = f"expected an integer from 1 to {MAX_INT32}, got '0'"
        raise reader.error(annotation_field(key), message)
    return seconds


def _moment(reader: Reader, annotations: Mapping[str, str], key: str) -> float | None:
    text = annotations.get(key)
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        message = f"expected an RFC 3339 time such as 2026-12-05T13:02:00Z, got {text!r}"
        raise reader.error(annotation_field(key), message) from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _sub_group(reader: Reader, annotations: Mapping[str, str]) -> SubGroupSpec | None:
    size_text = annotations.get(SUBGROUP_SIZE_ANNOTATION)
    level = _level(reader, annotations, SUBGROUP_LEVEL_ANNOTATION)
    if size_text is None and SUBGROUP_LEVEL_ANNOTATION not in annotations:
        return None
    if not level:
        message = f"{SUBGROUP_SIZE_ANNOTATION} needs {SUBGROUP_LEVEL_ANNOTATION} (a level name)"
        raise reader.error(annotation_field(SUBGROUP_LEVEL_ANNOTATION), message)
    field = annotation_field(SUBGROUP_SIZE_ANNOTATION)
    if size_text is None:
        raise reader.error(field, f"{SUBGROUP_LEVEL_ANNOTATION} needs a size here")
    size = whole_number(size_text)
    if size is None or size < 1:
        raise reader.error(field, f"expected an integer from 1 to {MAX_INT32}, got {size_text!r}")
    return SubGroupSpec(size=size, required=level)
