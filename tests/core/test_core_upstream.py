"""Kubernetes' own PodGroups (Workload API, scheduling.k8s.io/v1alpha2) are gangs Phalanx places."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.core import InvalidObject, run_cycle, snapshot_from_objects
from phalanx.core.model.names import UPSTREAM_API_GROUP
from phalanx.core.model.result import CycleResult
from phalanx.core.parse import parse_pod_group

GPU = "nvidia.com/gpu"
LEAF = "network.topology.nvidia.com/leaf"
ZONE = "topology.kubernetes.io/zone"


def nodes(racks: int = 2, per_rack: int = 2) -> list[dict[str, Any]]:
    """Nodes of 8 GPUs; rack r is also zone z<r>, so both labels group the same nodes."""
    return [
        {
            "kind": "Node",
            "metadata": {
                "name": f"n{r}-{i}",
                "labels": {LEAF: f"rack-{r}", ZONE: f"z{r}", "kubernetes.io/hostname": f"n{r}-{i}"},
            },
            "status": {"allocatable": {GPU: "8", "cpu": "64", "pods": "110"}},
        }
        for r in range(racks)
        for i in range(per_rack)
    ]


def network_topology() -> dict[str, Any]:
    return {
        "kind": "NetworkTopology",
        "metadata": {"name": "default"},
        "spec": {
            "levels": [
                {"name": "rack", "nodeLabels": [LEAF]},
                {"name": "host", "nodeLabels": ["kubernetes.io/hostname"]},
            ]
        },
    }


TIMEOUT = "scheduling.phalanx.io/schedule-timeout-seconds"


def upstream_group(
    name: str = "pg",
    policy: dict[str, Any] | None = None,
    key: str | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    gang = {"gang": {"minCount": 3}}
    spec: dict[str, Any] = {"schedulingPolicy": gang if policy is None else policy}
    if key is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": key}]}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ml", "annotations": annotations or {}},
        "spec": spec,
    }


def member(name: str, group: str = "pg", gpus: int = 8) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "schedulerName": "phalanx",
            "schedulingGroup": {"podGroupName": group},
            "containers": [{"name": "c", "resources": {"limits": {GPU: str(gpus)}}}],
        },
    }


def cycle(*objects: dict[str, Any]) -> CycleResult:
    return run_cycle(snapshot_from_objects(objects, strict=True))


def placed_nodes(result: CycleResult) -> set[str]:
    return {str(b.node) for b in result.bindings}


def test_a_gang_waits_for_min_count_pods() -> None:
    result = cycle(*nodes(), upstream_group(), member("a"), member("b"))
    assert result.bindings == ()
    assert result.groups[0].reason == "GangIncomplete"


def test_a_gang_starts_whole_inside_the_level_its_key_names() -> None:
    result = cycle(
        *nodes(racks=2, per_rack=2),
        network_topology(),
        upstream_group(key=LEAF, policy={"gang": {"minCount": 2}}),
        member("a"),
        member("b"),
    )
    assert len(result.bindings) == 2
    assert len({name.rsplit("-", 1)[0] for name in placed_nodes(result)}) == 1
    placement = result.groups[0].placement
    assert placement is not None and placement.level == "rack"


def test_a_gang_that_no_domain_of_its_level_holds_does_not_start() -> None:
    pods = [member(f"p{i}") for i in range(3)]
    result = cycle(*nodes(racks=2, per_rack=2), network_topology(), upstream_group(key=LEAF), *pods)
    assert result.bindings == ()
    assert result.groups[0].reason == "NoDomainFits"


def test_a_key_no_network_topology_reads_is_an_implicit_level() -> None:
    pods = [member(f"p{i}") for i in range(3)]
    objects = [*nodes(racks=2, per_rack=2), upstream_group(key=ZONE), *pods]
    assert cycle(*objects).bindings == ()  # 3 pods, zones of 2 nodes
    two = [*nodes(racks=2, per_rack=2), upstream_group(key=ZONE, policy={"gang": {"minCount": 2}})]
    result = cycle(*two, member("a"), member("b"))
    assert {n.rsplit("-", 1)[0] for n in placed_nodes(result)} in ({"n0"}, {"n1"})
    placement = result.groups[0].placement
    assert placement is not None and placement.level == ZONE


def test_basic_policy_places_pods_one_by_one() -> None:
    pods = [member(f"p{i}") for i in range(3)]
    result = cycle(*nodes(racks=1, per_rack=2), upstream_group(policy={"basic": {}}), *pods)
    assert len(result.bindings) == 2  # all-or-nothing would have placed none


def test_annotations_carry_queue_priority_and_preferred_level() -> None:
    annotations = {
        "scheduling.phalanx.io/queue": "team-a",
        "scheduling.phalanx.io/priority-class-name": "high",
        "scheduling.phalanx.io/topology-preferred": "rack",
        "scheduling.phalanx.io/topology-subgroup-size": "2",
        "scheduling.phalanx.io/topology-subgroup-level": "host",
        "scheduling.phalanx.io/schedule-timeout-seconds": "120",
    }
    info = parse_pod_group(upstream_group(annotations=annotations))
    assert info.api_group == UPSTREAM_API_GROUP
    assert (info.queue, info.priority_class_name, info.min_member) == ("team-a", "high", 3)
    assert info.schedule_timeout_seconds == 120
    assert info.topology is not None
    assert info.topology.preferred == "rack"
    assert info.topology.sub_group is not None
    assert (info.topology.sub_group.size, info.topology.sub_group.required) == (2, "host")


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        (upstream_group(policy={}), "spec.schedulingPolicy"),
        (upstream_group(policy={"gang": {"minCount": 0}}), "spec.schedulingPolicy.gang.minCount"),
        (
            upstream_group(annotations={"scheduling.phalanx.io/topology-subgroup-size": "x"}),
            "metadata.annotations[scheduling.phalanx.io/topology-subgroup-level]",
        ),
        (
            upstream_group(
                annotations={
                    "scheduling.phalanx.io/topology-subgroup-size": "0",
                    "scheduling.phalanx.io/topology-subgroup-level": "host",
                }
            ),
            "metadata.annotations[scheduling.phalanx.io/topology-subgroup-size]",
        ),
        (
            upstream_group(annotations={"scheduling.phalanx.io/schedule-timeout-seconds": "-1"}),
            "metadata.annotations[scheduling.phalanx.io/schedule-timeout-seconds]",
        ),
        (
            upstream_group(key=LEAF, annotations={"scheduling.phalanx.io/topology-required": "r"}),
            "metadata.annotations[scheduling.phalanx.io/topology-required]",
        ),
        # found by tests/core/test_core_parse_fuzz.py: "\u00b2".isdigit() is true, int() raised
        (
            upstream_group(
                annotations={
                    "scheduling.phalanx.io/topology-subgroup-size": "\u00b2",
                    "scheduling.phalanx.io/topology-subgroup-level": "host",
                }
            ),
            "metadata.annotations[scheduling.phalanx.io/topology-subgroup-size]",
        ),
        (
            upstream_group(annotations={TIMEOUT: "1\u00b2"}),
            "metadata.annotations[scheduling.phalanx.io/schedule-timeout-seconds]",
        ),
        (  # more than the int32 of spec.scheduleTimeoutSeconds
            upstream_group(annotations={TIMEOUT: "9" * 30}),
            "metadata.annotations[scheduling.phalanx.io/schedule-timeout-seconds]",
        ),
        (  # no level has such a name (the CRDs' pattern): refused, not looked for
            upstream_group(annotations={"scheduling.phalanx.io/topology-preferred": "Rack 1"}),
            "metadata.annotations[scheduling.phalanx.io/topology-preferred]",
        ),
    ],
)
def test_bad_upstream_groups_name_the_field(obj: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidObject) as error:
        parse_pod_group(obj)
    assert error.value.field == field


def test_a_phalanx_podgroup_of_the_same_name_wins() -> None:
    ours = {
        "apiVersion": "scheduling.phalanx.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "ml"},
        "spec": {"minMember": 1},
    }
    snapshot = snapshot_from_objects([upstream_group(), ours], strict=True)
    assert snapshot.index.groups["ml/pg"].api_group == "scheduling.phalanx.io"  # type: ignore[index]


def test_the_example_upstream_podgroup_is_a_gang_of_two_within_a_rack() -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    objects = [
        *yaml.safe_load_all((examples / "workloads" / "podgroup-upstream.yaml").read_text()),
        *yaml.safe_load_all((examples / "topology.yaml").read_text()),
    ]
    snapshot = snapshot_from_objects(objects, strict=True)
    (group,) = snapshot.groups
    assert group.min_member == 2 and group.queue == "team-a"
    assert group.topology is not None
    assert (group.topology.network_topology, group.topology.required) == ("default", "rack")
    assert {pod.group for pod in snapshot.pods} == {"pair"}


def test_a_phalanx_podgroup_may_name_its_level_by_node_label_as_kueue_does() -> None:
    ours = {
        "apiVersion": "scheduling.phalanx.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "ml"},
        "spec": {"minMember": 2, "topology": {"requiredNodeLabel": LEAF}},
    }
    pods = [member(f"p{i}", "pg") for i in range(2)]
    result = cycle(*nodes(racks=2, per_rack=2), network_topology(), ours, *pods)
    placement = result.groups[0].placement
    assert placement is not None and placement.level == "rack"
    three = {**ours, "spec": {**ours["spec"], "minMember": 3}}
    pods3 = [member(f"p{i}", "pg") for i in range(3)]
    assert cycle(*nodes(racks=2, per_rack=2), network_topology(), three, *pods3).bindings == ()
