"""Fuzzing the workload -> PodGroup translation with the example workloads, broken at
any depth (tests/object_mutations.py).

The promise: a queue-labelled workload Phalanx cannot read is an `InvalidObject` naming
the field (the operator reports it as a Warning Event on the workload), never another
exception; and what it does translate are PodGroups the API server accepts and the core
reads, so a translation never turns into a rejected apply or an invalid PodGroup.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from crd_schema import validate
from object_mutations import check_single_edits, fuzz_settings, load_examples, mutants
from phalanx.core import InvalidObject
from phalanx.core.model.names import GANG_SCOPE_ANNOTATION, MIN_MEMBER_ANNOTATION, QUEUE_KEY
from phalanx.core.parse import parse_pod_group
from phalanx.workloads import WORKLOAD_KINDS, pod_groups_for

KINDS = {kind.kind for kind in WORKLOAD_KINDS}


def _from_the_api_server(obj: dict[str, Any]) -> dict[str, Any]:
    """As the operator reads it: in a namespace, with a uid."""
    obj = copy.deepcopy(obj)
    obj["metadata"].update(namespace="ml", uid=f"uid-{obj['metadata']['name']}")
    return obj


def _annotated(obj: dict[str, Any], **annotations: str) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("annotations", {}).update(annotations)
    return obj


_EXAMPLES = [
    _from_the_api_server(obj) for obj in load_examples("workloads/*.yaml") if obj["kind"] in KINDS
]
_JOBSET = next(obj for obj in _EXAMPLES if obj["kind"] == "JobSet")
_JOB = next(obj for obj in _EXAMPLES if obj["kind"] == "Job")
# The annotations the examples do not show: one gang per replicated job, a gang minimum.
SEEDS = [
    *_EXAMPLES,
    _annotated(_JOBSET, **{GANG_SCOPE_ANNOTATION: "replicated-job"}),
    _annotated(_JOB, **{MIN_MEMBER_ANNOTATION: "2"}),
]


def translated_or_refused(obj: dict[str, Any]) -> None:
    """Any exception but InvalidObject escaping the translation is a bug; so is a
    PodGroup made that the CRD or the core would refuse."""
    try:
        groups = pod_groups_for(obj)
    except InvalidObject as error:
        assert error.field and error.message
        return
    for group in groups:
        validate(group)
        parse_pod_group(group)


def test_the_queue_labelled_seeds_are_translated() -> None:
    """(The Job of job-workload-api.yaml is left to Kubernetes' own PodGroup.)"""
    for seed in SEEDS:
        labelled = QUEUE_KEY in seed["metadata"].get("labels", {})
        assert bool(pod_groups_for(seed)) == labelled, seed["metadata"]["name"]


def test_every_single_edit_is_translated_or_refused_by_field() -> None:
    """Every path of every seed deleted, and given each fixed odd value, one at a time."""
    check_single_edits(SEEDS, translated_or_refused)


@fuzz_settings(max_examples=200)
@given(st.sampled_from(SEEDS).flatmap(mutants))
def test_a_broken_workload_is_translated_or_refused_by_field(obj: dict[str, Any]) -> None:
    """Up to three edits at once, with drawn values too."""
    translated_or_refused(obj)
