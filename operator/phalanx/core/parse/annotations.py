"""Phalanx's PodGroup settings written as annotations, where no spec field can hold them.

Kubernetes' own PodGroup (`scheduling.k8s.io`) and the workloads that get a gang
automatically (Job, JobSet, ...) have no field for a queue, a preferred level or a
sub-group; the same annotations carry them on both, read here once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from phalanx.core.model import SubGroupSpec
from phalanx.core.names import (
    NETWORK_TOPOLOGY_ANNOTATION,
    PREFERRED_ANNOTATION,
    PRIORITY_CLASS_ANNOTATION,
    REQUIRED_ANNOTATION,
    SCHEDULE_TIMEOUT_ANNOTATION,
    SUBGROUP_LEVEL_ANNOTATION,
    SUBGROUP_SIZE_ANNOTATION,
)
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

    @property
    def has_topology(self) -> bool:
        return bool(self.network_topology or self.required or self.preferred or self.sub_group)


def annotation_field(key: str) -> str:
    """How an error names an annotation: `metadata.annotations[KEY]`."""
    return f"metadata.annotations[{key}]"


def read_group_annotations(reader: Reader) -> GroupAnnotations:
    annotations = reader.labels("metadata.annotations")
    required = annotations.get(REQUIRED_ANNOTATION) or None
    preferred = annotations.get(PREFERRED_ANNOTATION) or None
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
    )


def _seconds(reader: Reader, annotations: Mapping[str, str], key: str) -> int | None:
    """A whole number of seconds >= 0 (what `spec.scheduleTimeoutSeconds` holds)."""
    text = annotations.get(key)
    if text is None:
        return None
    if not text.strip().isdigit():
        raise reader.error(annotation_field(key), f"expected an integer >= 0, got {text!r}")
    return int(text)


def _sub_group(reader: Reader, annotations: Mapping[str, str]) -> SubGroupSpec | None:
    size_text = annotations.get(SUBGROUP_SIZE_ANNOTATION)
    level = annotations.get(SUBGROUP_LEVEL_ANNOTATION)
    if size_text is None and level is None:
        return None
    if not level:
        message = f"{SUBGROUP_SIZE_ANNOTATION} needs {SUBGROUP_LEVEL_ANNOTATION} (a level name)"
        raise reader.error(annotation_field(SUBGROUP_LEVEL_ANNOTATION), message)
    field = annotation_field(SUBGROUP_SIZE_ANNOTATION)
    if size_text is None:
        raise reader.error(field, f"{SUBGROUP_LEVEL_ANNOTATION} needs a size here")
    if not size_text.strip().isdigit() or int(size_text) < 1:
        raise reader.error(field, f"expected an integer >= 1, got {size_text!r}")
    return SubGroupSpec(size=int(size_text), required=level)
