"""Fuzzing the parsers of raw Kubernetes objects with the examples, broken at any depth.

The promise: an object Phalanx cannot read is an `InvalidObject` naming the field (which
becomes a PodGroup condition or an Event), never another exception or a hang, and it
never takes down the handling of the good objects beside it. The mutants are the example
manifests with keys deleted and values of the wrong type, sign or size
(tests/object_mutations.py): every single edit from a fixed list, through the parsers
and, for the objects of a working cluster, through `run_cycle`; and up to three drawn
edits at once (hypothesis, derandomized: every run tries the same ones).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from object_mutations import (
    check_single_edits,
    fuzz_settings,
    load_examples,
    mutants,
    single_edits,
)
from phalanx.core import (
    CycleResult,
    InvalidObject,
    SchedulerConfig,
    run_cycle,
    snapshot_from_objects,
)
from phalanx.core.model.names import (
    GPU_INDEX_ANNOTATION,
    GPU_MEMORY_ANNOTATION,
    GPU_MEMORY_LABEL,
    KAI_GPU_FRACTION_ANNOTATION,
    KAI_GPU_MEMORY_ANNOTATION,
    PRIORITY_CLASS_ANNOTATION,
    SCHEDULE_TIMEOUT_ANNOTATION,
    SUBGROUP_LEVEL_ANNOTATION,
    SUBGROUP_SIZE_ANNOTATION,
)
from phalanx.core.parse.objects import PARSERS, parse_object

FUZZ = fuzz_settings(max_examples=150)


def _distinct(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One object per shape: the examples repeat a pod per gang member, names aside."""
    seen: dict[str, dict[str, Any]] = {}
    for obj in objects:
        shape = copy.deepcopy(obj)
        shape.get("metadata", {}).pop("name", None)
        seen.setdefault(json.dumps(shape, sort_keys=True, default=str), obj)
    return list(seen.values())


def _annotated(obj: dict[str, Any], **annotations: str) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["metadata"]["annotations"] = annotations
    return obj


EXAMPLES = load_examples("*.yaml", "demo/*.yaml", "plan/*.yaml", "workloads/*.yaml")
_PARSED = [obj for obj in EXAMPLES if obj.get("kind") in PARSERS]
_POD = next(obj for obj in _PARSED if obj["metadata"] == {**obj["metadata"], "name": "notebook",
                                                          "namespace": "ml"})
_SHARER = next(obj for obj in _PARSED if obj["metadata"]["name"] == "inference")  # no GPU asked
_NODE = next(obj for obj in _PARSED if obj["kind"] == "Node")
_UPSTREAM = next(obj for obj in _PARSED if obj["apiVersion"] == "scheduling.k8s.io/v1beta1"
                 and obj["metadata"]["name"] == "pair")
_GROUP = next(obj for obj in _PARSED if obj["metadata"]["name"] == "train-rack")

# What the examples do not show but the parsers read: the device a pod was given, KAI's
# annotations, a node's GPU memory, Phalanx's settings on Kubernetes' own PodGroup,
# roles, a sub-group and the hold the operator records on a PodGroup.
EXTRA: list[dict[str, Any]] = [
    _annotated(_POD, **{GPU_INDEX_ANNOTATION: "0,1"}),
    _annotated(_SHARER, **{KAI_GPU_FRACTION_ANNOTATION: "0.5"}),
    _annotated(_SHARER, **{KAI_GPU_MEMORY_ANNOTATION: "20480"}),
    {**_NODE, "metadata": {**_NODE["metadata"],
                           "labels": {**_NODE["metadata"]["labels"], GPU_MEMORY_LABEL: "81559"}}},
    _annotated(_UPSTREAM, **_UPSTREAM["metadata"]["annotations"],
               **{SUBGROUP_SIZE_ANNOTATION: "2", SUBGROUP_LEVEL_ANNOTATION: "host",
                  SCHEDULE_TIMEOUT_ANNOTATION: "600", PRIORITY_CLASS_ANNOTATION: "training-high"}),
    {**_GROUP,
     "spec": {**_GROUP["spec"], "roles": [{"name": "trainer", "minMember": 4}],
              "topology": {"required": "block", "subGroup": {"size": 4, "required": "rack"}}},
     "status": {"phase": "Running", "placement": {"nodes": ["node-a1"]},
                "nominated": {"nodes": ["node-a1"], "reason": "Preempting",
                              "since": "2025-01-10T09:00:00Z",
                              "expires": "2025-01-10T09:05:00Z"}}},
]
SEEDS = _distinct(_PARSED) + EXTRA


def parsed_or_refused(obj: dict[str, Any]) -> object:
    """The parser's answer: the core type, or the InvalidObject it raised."""
    try:
        return parse_object(obj)
    except InvalidObject as error:
        return error


KINDS = sorted({seed["kind"] for seed in SEEDS})
SEEDS_BY_KIND = st.sampled_from(KINDS).flatmap(
    lambda kind: st.sampled_from([seed for seed in SEEDS if seed["kind"] == kind])
)  # each kind as often: the examples are mostly pods


def _refused_by_field(obj: dict[str, Any]) -> object:
    """Any exception but InvalidObject escaping the parser is the bug these tests are for."""
    answer = parsed_or_refused(obj)
    if isinstance(answer, InvalidObject):
        assert answer.field and answer.message
    return answer


def _good_world() -> list[dict[str, Any]]:
    """examples/plan/cluster.yaml, whose PodGroup ml/llm-finetune is placed, with what it
    lacks for the core to read all it can: GPU memory on the nodes, a pod asking for
    part of a GPU's memory, the devices written on the running pod, and a sub-group
    (its pods then go in order of their names)."""
    world = load_examples("plan/cluster.yaml")
    for obj in world:
        if obj["metadata"]["name"] == "llm-finetune":
            obj["spec"]["topology"]["subGroup"] = {"size": 2, "required": "host"}
        if obj["kind"] == "Node":
            obj["metadata"]["labels"][GPU_MEMORY_LABEL] = "81559"
        if obj["metadata"]["name"] == "inference-0":
            obj["metadata"]["annotations"] = {GPU_INDEX_ANNOTATION: "0,1,2,3,4,5"}
    sharer = _annotated(_SHARER, **{GPU_MEMORY_ANNOTATION: "20Gi"})
    sharer["metadata"].update(name="sharer", namespace="ml")
    return [*world, sharer]


GOOD = _good_world()
GOOD_GROUP = "ml/llm-finetune"
CONFIG = SchedulerConfig()


def _cycle(objects: list[dict[str, Any]]) -> CycleResult:
    return run_cycle(snapshot_from_objects(objects), CONFIG)


BASELINE = _cycle(GOOD)


def _good_bindings(result: CycleResult) -> list[tuple[str, str]]:
    return sorted((b.pod, b.node) for b in result.bindings if b.pod.startswith("ml/"))


def _aside(obj: dict[str, Any], tag: str = "fuzz") -> dict[str, Any]:
    """A copy that names nothing of the good world: namespace `tag` for a namespaced
    object, a name starting `tag-` for a cluster-scoped one. One left without metadata
    to rename is returned as it is (it names nothing)."""
    obj = copy.deepcopy(obj)
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return obj
    if obj.get("kind") in ("Pod", "PodGroup"):
        metadata["namespace"] = tag
    else:
        metadata["name"] = f"{tag}-{metadata.get('name')}"
    return obj


def test_the_good_world_places_its_group() -> None:
    decision = BASELINE.decision(GOOD_GROUP)
    assert decision is not None and decision.scheduled
    placed = [b for b in BASELINE.bindings if b.group == GOOD_GROUP]
    assert len(placed) == 2


def test_every_single_edit_is_read_or_refused_by_field() -> None:
    """Every path of every seed deleted, and given each fixed odd value, one at a time."""
    check_single_edits(SEEDS, _refused_by_field)


def test_every_odd_edit_that_is_read_is_scheduled() -> None:
    """Each object of the good world edited in every way its parser reads (an odd value
    that is no error: a weight of 2^31-1, a pod named "\u00b2", a GPU index past the
    node's); one cycle per round, round k giving every object its k-th such edit (the
    shorter lists wrap around), so every edit meets the others' in a cycle that runs."""
    readable = [
        [(edit, obj) for _, edit, obj in single_edits(seed)
         if not isinstance(_refused_by_field(obj), InvalidObject)]
        for seed in GOOD
    ]  # fmt: skip
    for k in range(max(len(edits) for edits in readable)):
        chosen = [edits[k % len(edits)] for edits in readable]
        try:
            _cycle([obj for _, obj in chosen])
        except Exception as error:
            raise AssertionError(f"round {k}: {[edit for edit, _ in chosen]}") from error


@FUZZ
@given(SEEDS_BY_KIND.flatmap(mutants))
def test_a_broken_object_is_read_or_refused_by_field(obj: dict[str, Any]) -> None:
    """Up to three edits at once, with drawn values too."""
    _refused_by_field(obj)


@FUZZ
@given(st.lists(SEEDS_BY_KIND.map(_aside).flatmap(mutants), min_size=1, max_size=3))
def test_broken_objects_beside_good_ones_leave_them_placed(broken: list[dict[str, Any]]) -> None:
    """A cycle over the good world and broken objects runs; if the broken objects are
    all refused, the good group is placed exactly as without them, and each refusal is
    in the result for the operator to report."""
    result = _cycle([*GOOD, *broken])
    decision = result.decision(GOOD_GROUP)
    assert decision is not None
    refused = [parsed_or_refused(obj) for obj in broken]
    if all(isinstance(answer, InvalidObject) for answer in refused):
        assert decision == BASELINE.decision(GOOD_GROUP)
        assert _good_bindings(result) == _good_bindings(BASELINE)
        assert set(refused) <= set(result.invalid)
