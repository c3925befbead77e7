"""Kubernetes objects as the API server returns them become core types."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.core import InvalidObject, snapshot_from_objects
from phalanx.core.parse import (
    parse_network_topology,
    parse_node,
    parse_pod,
    parse_pod_group,
    parse_priority_class,
    parse_queue,
)

GPU = "nvidia.com/gpu"


def pod_obj(containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {"containers": containers, **spec},
    }


def container(
    requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None, **kw: Any
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "resources": resources, **kw}


def test_containers_add_up() -> None:
    obj = pod_obj([container({"cpu": "500m", "memory": "1Gi"}), container({"cpu": "1"})])
    assert parse_pod(obj).requests == {"cpu": 1500, "memory": 1073741824000}


def test_limits_stand_in_for_missing_requests() -> None:
    obj = pod_obj([container({"cpu": "1"}, {"cpu": "2", GPU: 8})])
    assert parse_pod(obj).requests == {"cpu": 1000, GPU: 8000}


def test_init_containers_take_the_maximum() -> None:
    obj = pod_obj(
        [container({"cpu": "1", "memory": "1Gi"})],
        initContainers=[container({"cpu": "4"}), container({"cpu": "2", "memory": "2Gi"})],
    )
    assert parse_pod(obj).requests == {"cpu": 4000, "memory": 2 * 1073741824000}


def test_sidecars_add_to_containers_and_to_later_init_containers() -> None:
    sidecar = container({"cpu": "1"}, restartPolicy="Always")
    obj = pod_obj(
        [container({"cpu": "2"})],
        initContainers=[sidecar, container({"cpu": "4"})],
    )
    # containers + sidecar = 3; the init container runs beside the sidecar: 4 + 1 = 5
    assert parse_pod(obj).requests == {"cpu": 5000}


def test_sidecar_after_init_container_adds_only_to_containers() -> None:
    sidecar = container({"cpu": "1"}, restartPolicy="Always")
    obj = pod_obj([container({"cpu": "2"})], initContainers=[container({"cpu": "2"}), sidecar])
    assert parse_pod(obj).requests == {"cpu": 3000}


def test_overhead_is_added() -> None:
    obj = pod_obj([container({"cpu": "1"})], overhead={"cpu": "250m", "memory": "64Mi"})
    assert parse_pod(obj).requests == {"cpu": 1250, "memory": 64 * 2**20 * 1000}


@pytest.mark.parametrize(
    ("labels", "annotations", "group"),
    [
        ({"scheduling.phalanx.io/pod-group": "a"}, {}, "a"),
        ({}, {"scheduling.k8s.io/group-name": "v"}, "v"),
        ({"scheduling.x-k8s.io/pod-group": "s"}, {}, "s"),
        (
            {"scheduling.phalanx.io/pod-group": "a", "scheduling.x-k8s.io/pod-group": "s"},
            {"scheduling.k8s.io/group-name": "v"},
            "a",
        ),
        ({"scheduling.x-k8s.io/pod-group": "s"}, {"scheduling.k8s.io/group-name": "v"}, "v"),
        ({}, {}, None),
    ],
)
def test_group_membership(
    labels: dict[str, str], annotations: dict[str, str], group: str | None
) -> None:
    obj = pod_obj([container()])
    obj["metadata"].update(labels=labels, annotations=annotations)
    assert parse_pod(obj).group == group


def test_pod_fields() -> None:
    obj = pod_obj(
        [container({GPU: "1"})],
        nodeName="n1",
        schedulerName="phalanx",
        priority=7,
        nodeSelector={"zone": "a"},
        tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "gpu", "operator": "Gt", "values": ["4"]}]}
                    ]
                }
            }
        },
    )
    obj["status"] = {"phase": "Running"}
    pod = parse_pod(obj)
    assert (pod.node_name, pod.scheduler_name, pod.priority, pod.phase) == (
        "n1",
        "phalanx",
        7,
        "Running",
    )
    assert pod.node_selector == {"zone": "a"}
    assert pod.tolerations[0].operator == "Exists"
    assert pod.affinity[0].match_expressions[0].values == ("4",)


def test_a_pod_with_a_deletion_timestamp_is_terminating() -> None:
    obj = pod_obj([container({GPU: "1"})], nodeName="n1")
    assert not parse_pod(obj).terminating
    obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert parse_pod(obj).terminating


def node_obj(**status: Any) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": "n1", "labels": {"rack": "r1"}}, "status": status}


def test_node_reads_allocatable_else_capacity() -> None:
    assert parse_node(node_obj(allocatable={GPU: "8"}, capacity={GPU: "9"})).allocatable == {
        GPU: 8000
    }
    assert parse_node(node_obj(capacity={GPU: "9"})).allocatable == {GPU: 9000}


@pytest.mark.parametrize(
    ("conditions", "ready"),
    [
        ([{"type": "Ready", "status": "True"}], True),
        ([{"type": "Ready", "status": "False"}], False),
        ([{"type": "Ready", "status": "Unknown"}], False),
        ([{"type": "MemoryPressure", "status": "False"}], False),
        ([], True),
    ],
)
def test_node_readiness(conditions: list[dict[str, str]], ready: bool) -> None:
    assert parse_node(node_obj(conditions=conditions)).ready is ready


def test_node_taints_and_cordon() -> None:
    obj = node_obj()
    obj["spec"] = {"unschedulable": True, "taints": [{"key": "gpu", "effect": "NoSchedule"}]}
    node = parse_node(obj)
    assert node.unschedulable and node.taints[0].key == "gpu" and node.labels == {"rack": "r1"}


def test_pod_group_fields() -> None:
    obj = {
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ml"},
        "spec": {
            "minMember": 4,
            "queue": "team-a",
            "minResources": {GPU: "32"},
            "roles": [{"name": "launcher", "minMember": 1}, {"name": "worker", "minMember": 3}],
            "topology": {"required": "rack", "subGroup": {"size": 2, "required": "host"}},
        },
    }
    group = parse_pod_group(obj)
    assert group.key == "ml/g" and group.queue == "team-a" and group.min_resources == {GPU: 32000}
    assert [r.name for r in group.roles] == ["launcher", "worker"]
    assert group.topology is not None and group.topology.network_topology == "default"
    assert group.topology.sub_group is not None and group.topology.sub_group.size == 2


def test_queue_and_topology_and_priority_class() -> None:
    queue = parse_queue(
        {
            "kind": "Queue",
            "metadata": {"name": "team-a"},
            "spec": {
                "weight": 3,
                "capability": {GPU: 64},
                "parent": "org",
                "state": "Closed",
                "namespaces": ["b", "a"],
            },
        }
    )
    assert (queue.weight, queue.capability, queue.parent, queue.open, queue.namespaces) == (
        3,
        {GPU: 64000},
        "org",
        False,
        ("a", "b"),
    )
    topo = parse_network_topology(
        {
            "kind": "NetworkTopology",
            "metadata": {"name": "default"},
            "spec": {
                "levels": [
                    {"name": "rack", "nodeLabels": ["leaf", "rack"]},
                    {"name": "host", "nodeLabels": ["kubernetes.io/hostname"]},
                ]
            },
        }
    )
    assert [lv.name for lv in topo.levels] == ["rack", "host"] and topo.levels[0].node_labels == (
        "leaf",
        "rack",
    )
    pc = parse_priority_class(
        {"kind": "PriorityClass", "metadata": {"name": "hi"}, "value": 100, "globalDefault": True}
    )
    assert (pc.value, pc.global_default) == (100, True)


@pytest.mark.parametrize(
    ("obj", "kind", "field"),
    [
        (pod_obj([container({"cpu": "lots"})]), "Pod", "spec.containers[0].resources.requests.cpu"),
        (
            pod_obj([container(None, {GPU: "1x"})]),
            "Pod",
            "spec.containers[0].resources.limits.nvidia.com/gpu",
        ),
        ({"kind": "Pod", "metadata": {"name": "p"}, "spec": {}}, "Pod", "spec.containers"),
        ({"kind": "Pod", "spec": {"containers": []}}, "Pod", "metadata"),
        (
            {"kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "-1"}}},
            "Node",
            "status.allocatable.cpu",
        ),
        ({"kind": "PodGroup", "metadata": {"name": "g"}, "spec": {}}, "PodGroup", "spec.minMember"),
        (
            {"kind": "PodGroup", "metadata": {"name": "g"}, "spec": {"minMember": 0}},
            "PodGroup",
            "spec.minMember",
        ),
        (
            {
                "kind": "PodGroup",
                "metadata": {"name": "g"},
                "spec": {"minMember": 2, "topology": {"required": "a", "preferred": "b"}},
            },
            "PodGroup",
            "spec.topology",
        ),
        (
            {
                "kind": "PodGroup",
                "metadata": {"name": "g"},
                "spec": {"minMember": 2, "roles": [{"name": "w", "minMember": 3}]},
            },
            "PodGroup",
            "spec.roles",
        ),
        (
            {
                "kind": "PodGroup",
                "metadata": {"name": "g"},
                "spec": {"minMember": 2, "roles": [{"name": "w", "minMember": 0}]},
            },
            "PodGroup",
            "spec.roles[0].minMember",
        ),
        (
            {"kind": "Queue", "metadata": {"name": "q"}, "spec": {"capability": {"cpu": "x"}}},
            "Queue",
            "spec.capability.cpu",
        ),
        (
            {"kind": "NetworkTopology", "metadata": {"name": "t"}, "spec": {"levels": []}},
            "NetworkTopology",
            "spec.levels",
        ),
        ({"kind": "PriorityClass", "metadata": {"name": "p"}}, "PriorityClass", "value"),
        ({"metadata": {"name": "x"}}, "object", "kind"),
        # found by tests/core/test_core_parse_fuzz.py: each of these crashed a cycle
        (  # OverflowError: the queue's share is its usage / weight, a float
            {"kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": 10**400}},
            "Queue",
            "spec.weight",
        ),
        (  # MemoryError: the core lists a node's GPU devices one by one
            node_obj(allocatable={GPU: "9e18"}),
            "Node",
            "status.allocatable.nvidia.com/gpu",
        ),
        (  # a minute or more: 10^999999999 was computed in full
            pod_obj([container({"memory": "1e999999999"})]),
            "Pod",
            "spec.containers[0].resources.requests.memory",
        ),
    ],
)
def test_invalid_objects_name_kind_and_field(obj: dict[str, Any], kind: str, field: str) -> None:
    with pytest.raises(InvalidObject) as caught:
        snapshot_from_objects([obj], strict=True)
    assert (caught.value.kind, caught.value.field) == (kind, field)
    relaxed = snapshot_from_objects([obj])
    assert [(e.kind, e.field) for e in relaxed.invalid] == [(kind, field)]


def test_lists_are_unpacked_and_other_kinds_ignored() -> None:
    objects = [
        {
            "kind": "List",
            "items": [
                node_obj(allocatable={GPU: "8"}),
                {"kind": "ConfigMap", "metadata": {"name": "c"}},
            ],
        },
        {
            "kind": "PodList",
            "items": [{"metadata": {"name": "p", "namespace": "ml"}, "spec": {"containers": []}}],
        },
    ]
    snapshot = snapshot_from_objects(objects, strict=True)
    assert [n.name for n in snapshot.nodes] == ["n1"]
    assert [p.key for p in snapshot.pods] == ["ml/p"]


def test_one_bad_object_does_not_stop_the_others() -> None:
    good = node_obj(allocatable={GPU: "8"})
    bad = {"kind": "Node", "metadata": {"name": "bad"}, "status": {"allocatable": {GPU: "eight"}}}
    snapshot = snapshot_from_objects([bad, good])
    assert [n.name for n in snapshot.nodes] == ["n1"]
    assert snapshot.invalid[0].name == "bad"


def test_invalid_pod_group_is_reported_as_an_error_decision() -> None:
    from phalanx.core import StatusCode, run_cycle

    objects = [
        {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {GPU: "8"}}},
        {
            "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ml"},
            "spec": {"minMember": "two"},
        },
        {
            "kind": "Pod",
            "metadata": {
                "name": "p",
                "namespace": "ml",
                "labels": {"scheduling.phalanx.io/pod-group": "g"},
            },
            "spec": {"schedulerName": "phalanx", "containers": [container({GPU: "1"})]},
        },
    ]
    result = run_cycle(snapshot_from_objects(objects))
    found = result.decision("ml/g")
    assert found is not None and (found.code, found.reason) == (StatusCode.ERROR, "InvalidSpec")
    assert "spec.minMember" in found.message and not result.bindings


def test_global_default_priority_class_applies_to_pods_without_priority() -> None:
    from phalanx.core import PriorityClassInfo, Snapshot
    from phalanx.core.model.inputs import PodInfo

    snapshot = Snapshot(
        pods=(PodInfo("ns", "p", {}), PodInfo("ns", "q", {}, priority_class_name="hi")),
        priority_classes=(
            PriorityClassInfo("base", 5, global_default=True),
            PriorityClassInfo("hi", 50),
        ),
    )
    index = snapshot.index
    assert [index.pod_priority(p) for p in index.pods] == [5, 50]
