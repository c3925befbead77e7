"""A group that runs with nothing to place keeps its work and decision from the previous
cycle's index (`phalanx.core.admission.members.Settled`) only while its PodGroup, its pods'
summary and the config are the very same objects: the result always equals a cycle
without the previous index."""

from __future__ import annotations

from dataclasses import replace

from core_builders import group, node, pod

from phalanx.core import CycleResult, GroupDecision, SchedulerConfig, Snapshot, run_cycle
from phalanx.core.model.inputs import GroupInfo, PodInfo
from phalanx.core.model.names import GroupKey
from phalanx.core.snapshot.index import ClusterIndex

A = GroupKey("default/a")
CONFIG = SchedulerConfig()


def running(name: str, count: int, node_name: str = "n1") -> list[PodInfo]:
    return [pod(f"{name}-{i}", gpus=1, group=name, node_name=node_name) for i in range(count)]


def cycle(
    pods: list[PodInfo],
    groups: list[GroupInfo],
    previous: ClusterIndex | None = None,
    config: SchedulerConfig = CONFIG,
) -> tuple[Snapshot, CycleResult]:
    nodes = [node("n1"), node("n2")]
    snapshot = Snapshot(nodes=nodes, pods=pods, groups=groups, previous=previous)
    return snapshot, run_cycle(snapshot, config, now=10.0)


def decision(result: CycleResult, key: GroupKey = A) -> GroupDecision:
    return next(d for d in result.groups if d.group == key)


def test_an_unchanged_running_group_keeps_the_decision_a_fresh_cycle_makes() -> None:
    pods, groups = [*running("a", 2), pod("b-0", gpus=1, group="b")], [group("a", 2), group("b", 1)]
    first, before = cycle(pods, groups)
    _, again = cycle(pods, groups, previous=first.index)
    _, fresh = cycle(pods, groups)
    assert again == fresh
    assert decision(again) is decision(before)  # taken over, not made again
    assert decision(again).message == "2 pods on nodes (minMember 2)"
    assert decision(again, GroupKey("default/b")) is not decision(before, GroupKey("default/b"))


def test_a_group_with_a_new_pod_on_a_node_is_decided_again() -> None:
    groups = [group("a", 2)]
    first, _ = cycle(running("a", 2), groups)
    more = running("a", 3)  # its pods' summary is a new object
    pods = [*first.pods, more[2]]
    _, again = cycle(pods, groups, previous=first.index)
    _, fresh = cycle(pods, groups)
    assert again == fresh
    assert decision(again).message == "3 pods on nodes (minMember 2)"


def test_a_changed_podgroup_is_decided_again() -> None:
    pods = running("a", 2)
    first, _ = cycle(pods, [group("a", 2)])
    changed = [group("a", 1, queue="team-b")]  # the same pods, another PodGroup version
    _, again = cycle(pods, changed, previous=first.index)
    _, fresh = cycle(pods, changed)
    assert again == fresh
    assert (decision(again).min_member, decision(again).queue) == (1, "team-b")


def test_another_config_decides_again() -> None:
    pods, groups = running("a", 2), [group("a", 2)]
    first, _ = cycle(pods, groups)
    short = replace(CONFIG, max_message_length=6)
    _, again = cycle(pods, groups, previous=first.index, config=short)
    _, fresh = cycle(pods, groups, config=short)
    assert again == fresh
    assert decision(again).message == "2 pods"


def test_a_group_held_by_its_backoff_is_not_given_the_kept_decision() -> None:
    pods, groups = running("a", 2), [group("a", 2)]
    first, _ = cycle(pods, groups)
    from phalanx.core.model.backoff import Backoff

    held = {A: Backoff(60.0, 70.0)}
    again = run_cycle(Snapshot(nodes=[node("n1"), node("n2")], pods=pods, groups=groups,
                               backoffs=held, previous=first.index), CONFIG, now=10.0)
    fresh = run_cycle(Snapshot(nodes=[node("n1"), node("n2")], pods=pods, groups=groups,
                               backoffs=held), CONFIG, now=10.0)
    assert again == fresh
    assert decision(again).held


def test_only_groups_with_a_pod_on_a_node_gone_have_their_pods_sorted_out() -> None:
    pods = [*running("a", 2), *running("b", 1), *running("b", 2, node_name="gone")[1:]]
    snapshot = Snapshot(nodes=[node("n1")], pods=pods, groups=[group("a", 2), group("b", 1)])
    index = snapshot.index
    assert index.off_nodes == frozenset({"default/b"})
    entries = {key: running_pods for key, _, _, running_pods in index.evictable_groups}
    assert entries[A] is index.members[A].running
    assert [p.name for p in entries[GroupKey("default/b")]] == ["b-0"]
