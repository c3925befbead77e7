"""Admission: priority, fair share across queues, creation time; queue capability."""

from __future__ import annotations

from core_builders import GPU, cycle, decision, gang, group, node, pod

from phalanx.core import PriorityClassInfo, QueueInfo, StatusCode


def test_higher_priority_group_goes_first() -> None:
    nodes = [node("n1", gpus=8)]
    low, low_pods = gang("a-low", 8, gpus=1)
    high = group("z-high", 8, priority_class_name="urgent")
    high_pods = [pod(f"z-{i}", gpus=1, group="z-high") for i in range(8)]
    result = cycle(nodes, low, low_pods, high, high_pods, PriorityClassInfo("urgent", 1000))
    assert decision(result, "default/z-high").scheduled
    assert decision(result, "default/a-low").placed == 0
    assert decision(result, "default/z-high").priority == 1000


def test_without_a_class_the_pods_highest_priority_counts() -> None:
    nodes = [node("n1", gpus=4)]
    a = [pod(f"a-{i}", gpus=2, group="a", priority=1) for i in range(2)]
    b = [pod(f"b-{i}", gpus=2, group="b", priority=5 if i else 0) for i in range(2)]
    result = cycle(nodes, group("a", 2), a, group("b", 2), b)
    assert decision(result, "default/b").scheduled and not decision(result, "default/a").scheduled


def test_earlier_creation_then_name_breaks_ties() -> None:
    nodes = [node("n1", gpus=2)]
    first = [pod("first", gpus=2, group="later-name")]
    second = [pod("second", gpus=2, group="early-name")]
    result = cycle(
        nodes,
        group("later-name", 1, creation=1.0),
        first,
        group("early-name", 1, creation=2.0),
        second,
    )
    assert decision(result, "default/later-name").scheduled
    same_time = cycle(
        nodes,
        group("b", 1),
        pod("pb", gpus=2, group="b"),
        group("a", 1),
        pod("pa", gpus=2, group="a"),
    )
    assert decision(same_time, "default/a").scheduled


def test_fair_share_prefers_the_queue_with_the_smaller_weighted_dominant_share() -> None:
    nodes = [node("n1", gpus=8), node("n2", gpus=8), node("n3", gpus=2)]
    queues = [QueueInfo("team-a"), QueueInfo("team-b")]
    used = [pod(f"a-run-{i}", gpus=2, group="a-run", node_name="n1") for i in range(3)]
    a_new = [pod("a-new", gpus=2, group="a-new")]
    b_new = [pod("b-new", gpus=2, group="b-new")]
    result = cycle(
        nodes,
        queues,
        group("a-run", 3, queue="team-a"),
        used,
        # team-a's group is older, but team-a already uses 6 of 18 GPUs
        group("a-new", 1, queue="team-a", creation=1.0),
        a_new,
        group("b-new", 1, queue="team-b", creation=2.0),
        b_new,
        pod("filler", gpus=8, node_name="n2", scheduler_name="default-scheduler"),
    )
    # 2 + 2 free GPUs remain (n1: 2, n3: 2): both fit, but b goes first
    order = [b.group for b in result.bindings]
    assert order == ["default/b-new", "default/a-new"]


def test_weight_scales_the_share() -> None:
    nodes = [node("n1", gpus=8), node("n2", gpus=2)]
    queues = [QueueInfo("heavy", weight=4), QueueInfo("light")]
    heavy_run = [pod("h-run", gpus=4, group="h-run", node_name="n1")]
    light_run = [pod("l-run", gpus=2, group="l-run", node_name="n1")]
    result = cycle(
        nodes,
        queues,
        group("h-run", 1, queue="heavy"),
        heavy_run,
        group("l-run", 1, queue="light"),
        light_run,
        group("h-new", 1, queue="heavy", creation=2.0),
        pod("h-new", gpus=2, group="h-new"),
        group("l-new", 1, queue="light", creation=1.0),
        pod("l-new", gpus=2, group="l-new"),
    )
    # shares: heavy 4/10/4 = 0.1, light 2/10/1 = 0.2 -> heavy first and takes the last 2 GPUs on n1
    assert result.bindings[0].group == "default/h-new"


def test_queue_capability_counts_running_pods_and_reports_numbers() -> None:
    nodes = [node(f"n{i}", gpus=8) for i in range(4)]
    team = QueueInfo("team-a", capability={GPU: 16000})
    running = [pod(f"r-{i}", gpus=4, group="run", node_name="n0") for i in range(3)]
    g, pods = gang("new", 2, gpus=4, queue="team-a")
    result = cycle(nodes, team, group("run", 3, queue="team-a"), running, g, pods)
    found = decision(result, "default/new")
    assert (found.reason, found.code, found.admitted) == (
        "QueueCapability",
        StatusCode.UNSCHEDULABLE,
        False,
    )
    assert found.message == "queue team-a: 12 of 16 GPUs used, needs 8"


def test_admissions_earlier_in_the_cycle_count_against_the_queue() -> None:
    nodes = [node(f"n{i}", gpus=8) for i in range(4)]
    team = QueueInfo("team-a", capability={GPU: 16000})
    first, first_pods = gang("first", 2, gpus=6, queue="team-a", creation=1.0)
    second, second_pods = gang("second", 2, gpus=4, queue="team-a", creation=2.0)
    result = cycle(nodes, team, first, first_pods, second, second_pods)
    assert decision(result, "default/first").scheduled
    assert decision(result, "default/second").message == "queue team-a: 12 of 16 GPUs used, needs 8"


def one_node_queue_with_a_stuck_and_a_fresh_gang() -> list[object]:
    """One 8-GPU node, a queue capped at 8 GPUs, and two 2 x 4-GPU gangs' pods: `stuck`
    (selects a node label nobody has) and `fresh`; the tests add the groups."""
    stuck = [
        pod(f"stuck-{i}", gpus=4, group="stuck", node_selector={"gpu": "b200"}) for i in range(2)
    ]
    fresh = [pod(f"fresh-{i}", gpus=4, group="fresh") for i in range(2)]
    return [node("n1", gpus=8), QueueInfo("team-a", capability={GPU: 8000}), *stuck, *fresh]


def test_admitted_but_unplaced_groups_hold_no_quota_in_later_cycles() -> None:
    """Stateless admission: a group Inqueue since an earlier cycle that still cannot be
    placed holds nothing; a newer group under the same capability gets in."""
    result = cycle(
        *one_node_queue_with_a_stuck_and_a_fresh_gang(),
        group("stuck", 2, queue="team-a", creation=1.0, priority_class_name="low"),
        group("fresh", 2, queue="team-a", creation=2.0, priority_class_name="high"),
        PriorityClassInfo("low", 1),
        PriorityClassInfo("high", 10),
    )
    assert decision(result, "default/fresh").scheduled
    assert decision(result, "default/stuck").reason == "QueueCapability"


def test_an_older_group_that_cannot_be_placed_does_not_block_the_queue_in_its_cycle() -> None:
    """No priorities to reorder them: the older gang is admitted first but fits on no
    node; its reservation is released within the cycle, so the newer gang gets the quota
    (otherwise it would wait for ever behind a gang that never places)."""
    result = cycle(
        *one_node_queue_with_a_stuck_and_a_fresh_gang(),
        group("stuck", 2, queue="team-a", creation=1.0),
        group("fresh", 2, queue="team-a", creation=2.0),
    )
    assert decision(result, "default/fresh").scheduled
    assert decision(result, "default/stuck").admitted
    assert decision(result, "default/stuck").reason != "Scheduled"


def test_parent_queue_capability_applies_to_children() -> None:
    nodes = [node(f"n{i}", gpus=8) for i in range(4)]
    queues = [
        QueueInfo("org", capability={GPU: 8000}),
        QueueInfo("team-a", parent="org"),
        QueueInfo("team-b", parent="org"),
    ]
    running = [pod("a-run", gpus=6, group="a-run", node_name="n0")]
    g, pods = gang("b-new", 1, gpus=4, queue="team-b")
    result = cycle(nodes, queues, group("a-run", 1, queue="team-a"), running, g, pods)
    assert decision(result, "default/b-new").message == "queue org: 6 of 8 GPUs used, needs 4"


def test_need_beyond_capability_is_unresolvable() -> None:
    team = QueueInfo("team-a", capability={GPU: 8000})
    g, pods = gang("big", 3, gpus=4, queue="team-a")
    found = decision(cycle([node("n1", gpus=16)], team, g, pods), "default/big")
    assert (found.code, found.message) == (
        StatusCode.UNRESOLVABLE,
        "queue team-a: capability is 8 GPUs, needs 12",
    )


def test_min_resources_reserve_more_than_the_pods_ask() -> None:
    team = QueueInfo("team-a", capability={GPU: 8000})
    g, pods = gang("job", 1, gpus=1, queue="team-a", min_resources={GPU: 10000})
    found = decision(cycle([node("n1")], team, g, pods), "default/job")
    assert found.reason == "QueueCapability" and "needs 10" in found.message


def test_closed_queue_missing_queue_and_namespace_rules() -> None:
    nodes = [node("n1")]
    queues = [QueueInfo("closed", open=False), QueueInfo("only-ml", namespaces=("ml",))]
    result = cycle(
        nodes,
        queues,
        group("c", 1, queue="closed"),
        pod("c-0", group="c"),
        group("m", 1, queue="missing"),
        pod("m-0", group="m"),
        group("ns", 1, queue="only-ml", namespace="web"),
        pod("ns-0", group="ns", namespace="web"),
        group("ok", 1, queue="only-ml", namespace="ml"),
        pod("ok-0", group="ok", namespace="ml"),
    )
    assert decision(result, "default/c").reason == "QueueClosed"
    assert decision(result, "default/m").reason == "QueueNotFound"
    assert decision(result, "web/ns").reason == "NamespaceNotAllowed"
    assert decision(result, "ml/ok").scheduled
    assert [b.group for b in result.bindings] == ["ml/ok"]


def test_default_queue_is_implied_and_unlimited() -> None:
    result = cycle([node("n1")], group("g", 1), pod("g-0", group="g"), pod("single"))
    assert decision(result, "default/g").scheduled and decision(result, "default/single").scheduled
    assert decision(result, "default/single").queue == "default"


def test_elastic_extras_respect_queue_capability() -> None:
    team = QueueInfo("team-a", capability={GPU: 6000})
    g, pods = gang("job", 5, gpus=2, min_member=2, queue="team-a")
    found = decision(cycle([node("n1", gpus=16)], team, g, pods), "default/job")
    assert found.scheduled and found.placed == 3


def _partial_and_older(**older_fields: object) -> list[object]:
    """Gang `z-part` (created last) has two of three 8-GPU pods bound; group `a-old`,
    created first, wants one 8-GPU pod; one node is free for one of them."""
    return [
        node("n0", gpus=8), node("n1", gpus=8), node("n2", gpus=8),
        group("z-part", 3, creation=5.0),
        pod("z-0", gpus=8, group="z-part", node_name="n0"),
        pod("z-1", gpus=8, group="z-part", node_name="n1"),
        pod("z-2", gpus=8, group="z-part"),
        group("a-old", 1, creation=1.0, **older_fields),
        pod("a-0", gpus=8, group="a-old"),
    ]  # fmt: skip


def test_a_partly_placed_gang_goes_before_older_groups_of_its_priority() -> None:
    """Its bound pods hold GPUs idle until the rest joins them."""
    result = cycle(*_partial_and_older())
    assert decision(result, "default/z-part").scheduled
    assert decision(result, "default/a-old").placed == 0


def test_a_partly_placed_gang_goes_before_an_emptier_queue_at_its_priority() -> None:
    queues = [QueueInfo("team-a"), QueueInfo("team-b")]
    objects = _partial_and_older(queue="team-a")
    objects[3] = group("z-part", 3, creation=5.0, queue="team-b")  # team-b holds 16 GPUs
    result = cycle(*objects, *queues)
    assert decision(result, "default/z-part").scheduled
    assert decision(result, "default/a-old").placed == 0


def test_a_partly_placed_gang_does_not_go_before_a_higher_priority() -> None:
    """Completing it first would have the higher priority evict it at once."""
    result = cycle(*_partial_and_older(priority_class_name="urgent"),
                   PriorityClassInfo("urgent", 1000))
    assert decision(result, "default/a-old").scheduled
    assert decision(result, "default/z-part").placed == 2
    assert result.evictions == ()
