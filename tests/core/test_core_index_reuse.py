"""An index built beside the previous one (`Snapshot(previous=...)`) equals one built from
scratch; it takes over only the summaries of groups whose pods are the very same objects."""

from __future__ import annotations

from dataclasses import replace

from core_builders import gang, node, pod

from phalanx.core import PriorityClassInfo, Snapshot
from phalanx.core.model.inputs import NodeInfo, PodInfo
from phalanx.core.model.names import GPU_MEMORY_LABEL, GroupKey
from phalanx.core.snapshot.index import ClusterIndex


def members_equal(got: ClusterIndex, want: ClusterIndex) -> None:
    assert got.members == want.members
    assert (got.singles, got.loose_running, got.loose_requests) == (
        want.singles, want.loose_running, want.loose_requests)


def usage_equal(got: ClusterIndex, want: ClusterIndex) -> None:
    assert (got.free, got.pods_free, got.gpu_pods, got.shared_nodes) == (
        want.free, want.pods_free, want.gpu_pods, want.shared_nodes)
    assert (got.pods_allocatable, got.base_exclusions, got.cluster_total,
            got.max_allocatable) == (want.pods_allocatable, want.base_exclusions,
                                     want.cluster_total, want.max_allocatable)
    assert [got.device_usage(i) for i in got.shared_nodes] == [
        want.device_usage(i) for i in want.shared_nodes]


def test_a_node_keeps_its_figures_only_while_it_and_its_pods_are_the_same() -> None:
    nodes = [node("n1"), node("n2"), node("n3")]
    pods = [pod("p1", gpus=2, node_name="n1"), pod("p2", gpus=0, node_name="n2", gpu_milli=500),
            pod("p3", gpus=1, node_name="n3")]
    first = Snapshot(nodes=nodes, pods=pods)
    same = Snapshot(nodes=nodes, pods=pods, previous=first.index)
    usage_equal(same.index, Snapshot(nodes=nodes, pods=pods).index)
    assert same.index.gpu_pods[0] is first.index.gpu_pods[0]  # taken over
    smaller = replace(node("n1", gpus=4), labels={"new": "label"})
    later = [smaller, nodes[1], nodes[2]]  # n1 changed; on n2 a pod arrived; n3 lost one
    pods = [*pods[:2], pod("p4", gpus=0, node_name="n2", gpu_milli=700)]
    second = Snapshot(nodes=later, pods=pods, previous=same.index)
    usage_equal(second.index, Snapshot(nodes=later, pods=pods).index)
    assert second.index.free[0]["nvidia.com/gpu"] == 2000
    assert second.index.free[2]["nvidia.com/gpu"] == 8000


def test_unchanged_groups_are_taken_over_and_changed_ones_summarized_again() -> None:
    nodes = [node("n1"), node("n2")]
    a_group, a_pods = gang("a", 2, gpus=4)
    b_group, b_pods = gang("b", 2, gpus=4)
    first = Snapshot(nodes=nodes, pods=[*a_pods, *b_pods], groups=[a_group, b_group])
    bound = replace(b_pods[0], node_name="n1")  # a new version of one of b's pods
    pods = [*a_pods, bound, b_pods[1]]
    second = Snapshot(nodes=nodes, pods=pods, groups=[a_group, b_group], previous=first.index)
    fresh = Snapshot(nodes=nodes, pods=pods, groups=[a_group, b_group])
    members_equal(second.index, fresh.index)
    a, b = GroupKey("default/a"), GroupKey("default/b")
    assert second.index.members[a] is first.index.members[a]
    assert second.index.members[b] is not first.index.members[b]
    assert second.index.members[b].running == (bound,)


def test_a_group_that_lost_a_pod_is_summarized_again() -> None:
    a_group, a_pods = gang("a", 3, gpus=1)
    first = Snapshot(nodes=[node("n1")], pods=a_pods, groups=[a_group])
    second = Snapshot(nodes=[node("n1")], pods=a_pods[:2], groups=[a_group],
                      previous=first.index)
    members_equal(second.index, Snapshot(nodes=[node("n1")], pods=a_pods[:2],
                                         groups=[a_group]).index)
    assert len(second.index.members[GroupKey("default/a")].pods) == 2


def test_a_new_default_priority_is_given_to_unchanged_groups() -> None:
    a_group, a_pods = gang("a", 2, gpus=1)
    first = Snapshot(nodes=[node("n1")], pods=a_pods, groups=[a_group])
    default = PriorityClassInfo("high", 1000, global_default=True)
    second = Snapshot(nodes=[node("n1")], pods=a_pods, groups=[a_group],
                      priority_classes=[default], previous=first.index)
    assert second.index.members[GroupKey("default/a")].priority == 1000
    members_equal(second.index, Snapshot(nodes=[node("n1")], pods=a_pods, groups=[a_group],
                                         priority_classes=[default]).index)


def test_a_gpu_memory_pod_is_charged_by_its_node_as_it_is_now() -> None:
    a_group, _ = gang("a", 1, gpus=0)
    running = PodInfo("default", "a-0", {}, node_name="n1", phase="Running", group="a",
                      gpu_memory=20_000)

    def on(memory: str) -> NodeInfo:
        return replace(node("n1"), labels={GPU_MEMORY_LABEL: memory})

    first = Snapshot(nodes=[on("80000")], pods=[running], groups=[a_group])
    second = Snapshot(nodes=[on("40000")], pods=[running], groups=[a_group],
                      previous=first.index)
    key = GroupKey("default/a")
    assert first.index.members[key].running_requests != second.index.members[key].running_requests
    members_equal(second.index, Snapshot(nodes=[on("40000")], pods=[running],
                                         groups=[a_group]).index)
