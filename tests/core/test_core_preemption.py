"""Preemption within a queue, reclaim across queues, holds and starvation reservations:
decided by `run_cycle` from a snapshot, so plan, simulator and operator agree."""

from __future__ import annotations

from dataclasses import replace

from core_builders import decision, group, node, pod, racks, snapshot_of, topology

from phalanx.core import (
    CycleResult,
    NodeName,
    Nomination,
    PodInfo,
    PriorityClassInfo,
    QueueInfo,
    SchedulerConfig,
    Snapshot,
    run_cycle,
)
from phalanx.core.model.inputs import GroupInfo, NodeInfo

HIGH = PriorityClassInfo("high", 1000)
LOW = PriorityClassInfo("low", 0)
NEVER = PriorityClassInfo("polite", 1000, preemption_policy="Never")
SPEC = topology("default", "block", "rack", "host")


def running_gang(
    name: str,
    nodes: list[str],
    gpus: int = 8,
    priority: str = "low",
    queue: str = "default",
    min_member: int | None = None,
    started: float = 0.0,
    per_node: int = 1,
) -> list[object]:
    """A gang whose pods run `per_node` to a node on `nodes`."""
    pods: list[object] = [
        pod(f"{name}-{i}", gpus=gpus, group=name, node_name=n, started_at=started)
        for i, n in enumerate(x for x in nodes for _ in range(per_node))
    ]
    size = len(pods)
    pods.append(
        group(name, size if min_member is None else min_member, priority_class_name=priority,
              queue=queue)
    )  # fmt: skip
    return pods


def waiting_gang(
    name: str, size: int, gpus: int = 8, priority: str = "high", queue: str = "default",
    **fields: object,
) -> list[object]:  # fmt: skip
    pods: list[object] = [pod(f"{name}-{i}", gpus=gpus, group=name) for i in range(size)]
    pods.append(group(name, size, priority_class_name=priority, queue=queue, **fields))
    return pods


def run(*items: object, now: float = 0.0, config: SchedulerConfig | None = None,
        refused: frozenset[str] = frozenset()) -> CycleResult:  # fmt: skip
    flat: list[object] = [HIGH, LOW, NEVER, SPEC]
    for item in items:
        flat.extend(item if isinstance(item, list) else [item])
    snapshot = snapshot_of(flat)
    snapshot = replace(snapshot, eviction_refused=refused)
    return run_cycle(snapshot, config, now)


def evicted_groups(result: CycleResult) -> set[str | None]:
    return {e.group for e in result.evictions}


def names(nodes: list[NodeInfo]) -> list[str]:
    return [n.name for n in nodes]


def test_a_high_gang_evicts_exactly_the_low_gangs_it_needs_and_is_not_bound_yet() -> None:
    nodes = racks(2, 4)  # one block, racks r0 and r1 of 4 nodes
    r0, r1 = names(nodes[:4]), names(nodes[4:])
    result = run(
        nodes,
        running_gang("a", r0[:2]),
        running_gang("b", r0[2:]),
        running_gang("c", r1),
        waiting_gang("high", 4, required="rack"),
    )
    high = decision(result, "default/high")
    assert not high.scheduled and high.reason == "Preempting"
    assert evicted_groups(result) == {"default/a", "default/b"}  # rack r0: 2 gangs of 2 nodes
    assert {e.pod for e in result.evictions} == {f"default/{g}-{i}" for g in "ab" for i in (0, 1)}
    assert all(e.preemptor == "default/high" and e.reason == "Preempted" for e in result.evictions)
    assert high.nomination is not None and sorted(high.nomination.nodes) == r0
    assert not [b for b in result.bindings if b.group == "default/high"]


def test_lowest_priority_first_then_fewest_gpus() -> None:
    nodes = [node(f"n{i}") for i in range(3)]
    result = run(
        nodes,
        PriorityClassInfo("mid", 500),
        running_gang("mid", ["n0"], priority="mid"),
        running_gang("big", ["n1"], gpus=8),
        running_gang("small", ["n2"], gpus=4),
        pod("filler", gpus=4, node_name="n2", priority=2000),
        waiting_gang("high", 1, gpus=4),
    )
    assert evicted_groups(result) == {"default/small"}


def test_elastic_pods_above_min_member_go_before_any_whole_gang() -> None:
    nodes = [node(f"n{i}") for i in range(3)]
    result = run(
        nodes,
        running_gang("elastic", ["n0", "n1"], min_member=1, priority="low"),
        running_gang("lone", ["n2"], priority="low"),
        waiting_gang("high", 1),
    )
    assert len(result.evictions) == 1
    (eviction,) = result.evictions
    assert eviction.group == "default/elastic"


def test_never_evicts_when_the_gang_would_still_not_fit() -> None:
    nodes = [node(f"n{i}") for i in range(2)]
    result = run(
        nodes,
        running_gang("low", ["n0"]),
        running_gang("peer", ["n1"], priority="high"),
        waiting_gang("high", 2),
    )
    assert result.evictions == ()
    message = decision(result, "default/high").message
    assert "preemption cannot help: would need 1 gang of priority >= 1000" in message


def test_the_explanation_can_be_turned_off_without_changing_a_decision() -> None:
    """The simulator shows no messages and skips the explanation's second search."""
    nodes = [node(f"n{i}") for i in range(2)]
    items = (running_gang("low", ["n0"]), running_gang("peer", ["n1"], priority="high"),
             waiting_gang("high", 2))  # fmt: skip
    quiet = run(nodes, *items, config=SchedulerConfig(explain_preemption=False))
    told = run(nodes, *items)
    assert "preemption cannot help" not in decision(quiet, "default/high").message
    assert decision(told, "default/high").message.startswith(
        decision(quiet, "default/high").message)
    assert (quiet.bindings, quiet.evictions) == (told.bindings, told.evictions)


def test_equal_priority_is_never_preempted_and_other_queues_are_not_preempted() -> None:
    nodes = [node("n0"), node("n1")]
    result = run(
        nodes,
        QueueInfo("other"),
        running_gang("peer", ["n0"], priority="high"),
        running_gang("elsewhere", ["n1"], queue="other"),
        waiting_gang("high", 1),
    )
    assert result.evictions == ()


def test_preemption_policy_never_turns_it_off_and_says_so() -> None:
    polite = waiting_gang("high", 1, priority="polite")
    result = run([node("n0")], running_gang("low", ["n0"]), polite)
    assert result.evictions == ()
    assert "preemptionPolicy Never" in decision(result, "default/high").message


def test_pods_of_other_schedulers_are_never_victims() -> None:
    foreign = pod("foreign", gpus=8, node_name="n0", scheduler_name="default-scheduler",
                  priority=0)  # fmt: skip
    result = run([node("n0")], foreign, waiting_gang("high", 1))
    assert result.evictions == ()


def test_required_level_victims_are_chosen_inside_one_domain() -> None:
    """Two 4-GPU gangs in different racks would be the cheapest anywhere, but the gang
    must share a rack: the rack needing fewest GPUs evicted wins."""
    nodes = racks(2, 2)
    r0, r1 = names(nodes[:2]), names(nodes[2:])
    result = run(
        nodes,
        running_gang("x", [r0[0]], gpus=4),
        running_gang("z", [r0[1]], gpus=8),
        running_gang("y", [r1[0]], gpus=4),
        running_gang("w", [r1[1]], gpus=4),
        waiting_gang("high", 2, gpus=8, required="rack"),
    )
    high = decision(result, "default/high")
    assert high.reason == "Preempting", high.message
    assert evicted_groups(result) == {"default/y", "default/w"}
    assert high.nomination is not None and sorted(high.nomination.nodes) == r1


def test_a_refused_eviction_makes_it_pick_other_victims() -> None:
    nodes = [node("n0"), node("n1")]
    first = run(nodes, running_gang("a", ["n0"], started=1.0),
                running_gang("b", ["n1"], started=5.0), waiting_gang("high", 1), now=10.0)
    assert evicted_groups(first) == {"default/b"}  # started later: loses less work
    second = run(nodes, running_gang("a", ["n0"], started=1.0),
                 running_gang("b", ["n1"], started=5.0), waiting_gang("high", 1), now=10.0,
                 refused=frozenset({"default/b-0"}))  # fmt: skip
    assert evicted_groups(second) == {"default/a"}


def test_reclaim_takes_from_a_queue_above_its_guarantee_only() -> None:
    gpus = {"nvidia.com/gpu": 16000}
    nodes = [node(f"n{i}") for i in range(4)]
    queues = [QueueInfo("team-a", guarantee=gpus), QueueInfo("team-b", guarantee=gpus)]
    result = run(
        nodes,
        queues,
        running_gang("b1", ["n0", "n1"], queue="team-b", priority="high"),
        running_gang("b2", ["n2", "n3"], queue="team-b", priority="high"),
        waiting_gang("a", 2, queue="team-a", priority="low"),
    )
    assert len(evicted_groups(result)) == 1
    assert {e.reason for e in result.evictions} == {"Reclaimed"}
    # team-b at its guarantee: nothing more to take, and the message says so
    at = run(
        nodes[:2],
        queues,
        running_gang("b1", ["n0", "n1"], queue="team-b", priority="high"),
        waiting_gang("a", 2, queue="team-a", priority="low"),
    )
    assert at.evictions == ()
    assert "queue team-b is at its guarantee" in decision(at, "default/a").message


def held_group(name: str, nodes: list[str], since: float, expires: float) -> GroupInfo:
    held = Nomination(tuple(NodeName(n) for n in nodes), "Preempting", since, expires)
    return group(name, 1, priority_class_name="high", nomination=held)


def test_held_room_is_kept_from_lower_or_equal_priority_groups_until_it_expires() -> None:
    holder = held_group("holder", ["n0"], since=0.0, expires=100.0)
    victim = pod("victim", gpus=8, node_name="n0", terminating=True)
    other = [pod("other-0", gpus=4, group="other"), group("other", 1, priority_class_name="high")]
    waiting = [pod("holder-0", gpus=8, group="holder"), holder]
    result = run([node("n0"), node("n1", gpus=4)], victim, waiting, other, now=50.0)
    assert decision(result, "default/other").scheduled  # n1 is free
    held = decision(result, "default/holder")
    assert held.nomination == holder.nomination
    assert held.reason == "Preempting" and "terminating" in held.message
    # the victim is gone: the holder is bound, nobody else took n0
    result = run([node("n0"), node("n1", gpus=4)], waiting, other, now=60.0)
    assert [b.node for b in result.bindings if b.group == "default/holder"] == ["n0"]
    assert decision(result, "default/holder").nomination is None


def test_nothing_of_lower_priority_lands_on_held_nodes_until_the_hold_expires() -> None:
    holder = held_group("holder", ["n0"], since=0.0, expires=100.0)
    victim = pod("victim", gpus=8, node_name="n0", terminating=True)  # stuck terminating
    low = [pod("low-0", gpus=0, group="low"), group("low", 1, priority_class_name="low")]
    waiting = [pod("holder-0", gpus=8, group="holder"), holder]
    result = run([node("n0")], victim, waiting, low, now=10.0)
    assert not decision(result, "default/low").scheduled
    assert "held for another group" in decision(result, "default/low").message
    assert decision(result, "default/holder").nomination == holder.nomination
    expired = run([node("n0")], victim, waiting, low, now=200.0)
    assert decision(expired, "default/low").scheduled
    assert decision(expired, "default/holder").nomination is None
    assert "released" in decision(expired, "default/holder").message


def test_a_starving_gang_gets_a_reservation_that_small_groups_must_avoid() -> None:
    nodes, busy = two_nodes_partly_busy()
    big = waiting_gang("big", 1, priority="low", creation=0.0)
    small = [pod("small-0", gpus=4, group="small"), group("small", 1, creation=1000.0)]
    result = run(nodes, busy, big, small, now=400.0)
    held = decision(result, "default/big").nomination
    assert held is not None and held.reason == "Reserved" and held.nodes == ("n1",)
    assert result.evictions == ()
    assert [b.node for b in result.bindings if b.group == "default/small"] == ["n0"]
    early = run(nodes, busy, big, small, now=100.0)
    assert decision(early, "default/big").nomination is None


def test_preemption_off_in_config() -> None:
    result = run([node("n0")], running_gang("low", ["n0"]), waiting_gang("high", 1),
                 config=SchedulerConfig(preemption=False))  # fmt: skip
    assert result.evictions == ()


def test_snapshot_type_is_usable_directly() -> None:
    assert isinstance(snapshot_of([node("n0")]), Snapshot)
    assert PodInfo


def test_one_reservation_at_a_time() -> None:
    nodes = [node("n0"), node("n1"), node("n2")]
    busy = [pod(f"busy-{i}", gpus=4, node_name=f"n{i}", started_at=50.0) for i in range(3)]
    first = waiting_gang("first", 1, priority="low", creation=0.0)
    second = waiting_gang("second", 1, priority="low", creation=1.0)
    result = run(nodes, busy, first, second, now=400.0)
    assert decision(result, "default/first").nomination is not None
    assert decision(result, "default/second").nomination is None


def test_a_global_default_class_with_preemption_never_applies_to_groups_without_a_class() -> None:
    polite_default = PriorityClassInfo("polite-default", 500, global_default=True,
                                       preemption_policy="Never")  # fmt: skip
    low = [pod("low-0", gpus=8, group="low", node_name="n0", priority=0),
           group("low", 1, priority_class_name="low")]  # fmt: skip
    waiting = [pod("w-0", gpus=8, group="w"), group("w", 1)]
    result = run([node("n0")], polite_default, low, waiting)
    assert result.evictions == ()
    assert "preemptionPolicy Never" in decision(result, "default/w").message


def test_after_a_restart_the_recorded_hold_is_kept_and_only_the_rest_is_evicted() -> None:
    """Cycle 1 evicts two gangs and holds rack r0; the operator evicted one of them and
    restarted. Cycle 2 reads the hold back: it evicts only the gang still running, keeps
    the hold's times, and a lower-priority newcomer stays off the held nodes."""
    nodes = racks(2, 4)
    r0 = names(nodes[:4])
    low_a, low_b = running_gang("a", r0[:2], gpus=4), running_gang("b", r0[2:])
    others = [running_gang(f"c{i}", [n.name], priority="high") for i, n in enumerate(nodes[4:])]
    first = run(nodes, low_a, low_b, *others, waiting_gang("high", 4, required="rack"), now=5.0)
    held = decision(first, "default/high").nomination
    assert held is not None and evicted_groups(first) == {"default/a", "default/b"}
    going = [replace(p, terminating=True) if isinstance(p, PodInfo) else p for p in low_a]
    high = waiting_gang("high", 4, required="rack")
    high[-1] = replace(high[-1], nomination=held)  # type: ignore[type-var]
    newcomer = [pod("small-0", gpus=1, group="small"), group("small", 1, priority_class_name="low")]
    second = run(nodes, going, low_b, *others, high, newcomer, now=20.0)
    assert evicted_groups(second) == {"default/b"}
    assert decision(second, "default/high").nomination == held
    assert not decision(second, "default/small").scheduled  # r0's free GPUs are held
    unheld = [replace(high[-1], nomination=None), *high[:-1]]
    lower = run(nodes, going, low_b, *others, unheld, newcomer,
                config=SchedulerConfig(preemption=False))  # fmt: skip
    assert decision(lower, "default/small").scheduled  # without the hold it would fit there
    gone = run(nodes, *others, high, newcomer, now=40.0)
    assert sorted(b.node for b in gone.bindings if b.group == "default/high") == r0


def test_reclaim_leaves_queues_under_a_non_reclaimable_parent_alone() -> None:
    gpus = {"nvidia.com/gpu": 16000}
    nodes = [node(f"n{i}") for i in range(2)]
    queues = [
        QueueInfo("team-a", guarantee=gpus),
        QueueInfo("locked", reclaimable=False),
        QueueInfo("team-b", parent="locked"),
    ]
    items = [running_gang(f"b{i}", [f"n{i}"], queue="team-b") for i in range(2)]
    waiting = waiting_gang("a", 1, queue="team-a", priority="low")
    result = run(nodes, queues, *items, waiting)
    assert result.evictions == ()
    message = decision(result, "default/a").message
    assert "queue team-b is not reclaimable (its parent locked is not)" in message
    opened = [replace(q, reclaimable=True) if q.name == "locked" else q for q in queues]
    result = run(nodes, opened, *items, waiting)
    assert {e.reason for e in result.evictions} == {"Reclaimed"}


def test_two_gangs_of_a_queue_do_not_both_reclaim_the_same_last_room() -> None:
    """The first reclaim brings team-b to its guarantee and team-a down to its own: the
    second team-b gang of the same cycle must see both, and take nothing."""
    gpus = {"nvidia.com/gpu": 16000}
    nodes = [node(f"n{i}") for i in range(4)]
    queues = [QueueInfo("team-a", guarantee=gpus), QueueInfo("team-b", guarantee=gpus)]
    result = run(
        nodes,
        queues,
        *(running_gang(f"a{i}", [f"n{i}"], queue="team-a") for i in range(3)),
        running_gang("b0", ["n3"], queue="team-b"),
        waiting_gang("b1", 1, queue="team-b", priority="low", creation=1.0),
        waiting_gang("b2", 1, queue="team-b", priority="low", creation=2.0),
    )
    assert len(evicted_groups(result)) == 1
    assert {e.preemptor for e in result.evictions} == {"default/b1"}
    assert "queue team-b is at its guarantee" in decision(result, "default/b2").message


def test_reclaimed_room_is_kept_from_a_higher_priority_group_of_another_queue() -> None:
    """A team-a group of higher priority could not evict team-b's holder once it runs:
    taking the held room would only send the holder reclaiming again."""
    held = Nomination((NodeName("n0"),), "Preempting", 0.0, 100.0)
    holder = [
        pod("b-0", gpus=8, group="b"),
        group("b", 1, priority_class_name="low", queue="team-b", nomination=held),
    ]
    gpus = {"nvidia.com/gpu": 8000}
    queues = [QueueInfo("team-a", guarantee=gpus), QueueInfo("team-b", guarantee=gpus)]
    high = waiting_gang("a", 1, queue="team-a", priority="high")
    result = run([node("n0")], queues, holder, high, now=10.0)
    assert [b.group for b in result.bindings] == ["default/b"]
    assert "held for another group" in decision(result, "default/a").message


def test_victims_with_less_top_priority_work_are_preferred() -> None:
    """Both nodes need a mid-priority victim; n1's costs 1 GPU-hour of its work (and 7 of
    low work), n0's 8 GPU-hours of a mid-priority job: n1 is cheaper."""
    mid = PriorityClassInfo("mid", 500)
    small = [running_gang(f"low{i}", ["n1"], gpus=1, started=1.0) for i in range(7)]
    result = run(
        [node("n0"), node("n1")],
        mid,
        running_gang("big", ["n0"], priority="mid", started=1.0),
        running_gang("one", ["n1"], gpus=1, priority="mid", started=1.0),
        *small,
        waiting_gang("high", 1),
        now=3601.0,
    )
    assert "default/big" not in evicted_groups(result)
    assert evicted_groups(result) == {"default/one"} | {f"default/low{i}" for i in range(7)}


def test_a_gang_gets_no_reservation_when_only_higher_priority_work_was_placed_meanwhile() -> None:
    """Starving means groups of equal or lower priority were placed while it waited:
    work that started before it came, or that outranks it, is not that."""
    nodes = [node("n0"), node("n1")]
    before = [pod(f"old-{i}", gpus=4, node_name=f"n{i}", started_at=0.0) for i in range(2)]
    big = waiting_gang("big", 1, priority="low", creation=10.0)
    result = run(nodes, before, big, now=400.0)
    assert decision(result, "default/big").nomination is None
    higher = [pod("urgent-0", gpus=4, node_name="n1", started_at=50.0, priority=1000)]
    result = run(nodes, before[:1], higher, big, now=400.0)
    assert decision(result, "default/big").nomination is None
    lower = [pod("later-0", gpus=4, node_name="n1", started_at=50.0, priority=0)]
    result = run(nodes, before[:1], lower, big, now=400.0)
    held = decision(result, "default/big").nomination
    assert held is not None and held.reason == "Reserved"


def test_a_queue_below_its_guarantee_reclaims_before_it_preempts_its_own_gangs() -> None:
    """Evicting its own low gang would only send that gang reclaiming in turn."""
    queues = [
        QueueInfo("team-a", guarantee={"nvidia.com/gpu": 32000}),
        QueueInfo("team-b", guarantee={"nvidia.com/gpu": 16000}),
    ]
    result = run(
        [node(f"n{i}") for i in range(4)],
        queues,
        running_gang("own", ["n0"], queue="team-a", priority="low"),
        running_gang("b1", ["n1", "n2"], queue="team-b", priority="high"),
        running_gang("b2", ["n3"], queue="team-b", priority="high", started=5.0),
        waiting_gang("a", 1, queue="team-a", priority="high"),
    )
    assert evicted_groups(result) == {"default/b2"}  # team-b's 8 GPUs above its guarantee
    assert {e.reason for e in result.evictions} == {"Reclaimed"}


def test_freed_room_goes_first_to_a_queue_that_stays_within_its_guarantee() -> None:
    """A higher-priority gang of a queue at its guarantee would borrow the free node,
    and the other queue would reclaim it at once; the other queue's gang goes first."""
    queues = [QueueInfo(q, guarantee={"nvidia.com/gpu": 8000}) for q in ("team-a", "team-b")]
    result = run(
        [node("n0"), node("n1")],
        queues,
        running_gang("a-low", ["n1"], queue="team-a", priority="low"),
        waiting_gang("a-high", 1, queue="team-a", priority="high"),
        waiting_gang("b-low", 1, queue="team-b", priority="low"),
    )
    assert [(b.group, b.node) for b in result.bindings] == [("default/b-low", "n0")]
    assert evicted_groups(result) == {"default/a-low"}  # a-high preempts in its own queue
    assert {e.reason for e in result.evictions} == {"Preempted"}


def two_nodes_partly_busy() -> tuple[list[NodeInfo], list[PodInfo]]:
    """n0 with 4 of its GPUs used and n1 with 1, by pods that started at t=50 (placed
    while a big gang waited): the reservation tests' cluster."""
    nodes = [node("n0"), node("n1")]
    busy = [pod(f"busy-{i}", gpus=g, node_name=f"n{i}", started_at=50.0)
            for i, g in enumerate((4, 1))]  # fmt: skip
    return nodes, busy


def reserved(since: float, expires: float) -> Nomination:
    return Nomination((NodeName("n1"),), "Reserved", since, expires)


def test_a_starvation_reservation_is_renewed_while_only_older_work_is_in_its_way() -> None:
    nodes, busy = two_nodes_partly_busy()
    big = waiting_gang("big", 1, priority="low", creation=0.0, nomination=reserved(300, 600))
    small = [pod("small-0", gpus=6, group="small"), group("small", 1, creation=1000.0)]
    result = run(nodes, busy, big, small, now=700.0)
    held = decision(result, "default/big").nomination
    assert held is not None and held.nodes == ("n1",) and held.since == 300.0
    assert held.expires > 700.0
    # a group let in by backfill since (the start is unknown: it ends by the end of the
    # hold's term, 600) does not end the reservation; one that ends later was not let
    # in, so it does
    let_in = running_gang("let-in", ["n1"], gpus=6, started=400.0)
    let_in[-1] = replace(let_in[-1], runtime_limit_seconds=200)  # type: ignore[type-var]
    result = run(nodes, busy, let_in, big, now=700.0)
    assert decision(result, "default/big").nomination == held
    let_in[-1] = replace(let_in[-1], runtime_limit_seconds=600)  # type: ignore[type-var]
    assert decision(run(nodes, busy, let_in, big, now=700.0), "default/big").nomination is None
    # a pod that started on n1 after the reservation (higher priority may): released
    newer = running_gang("newer", ["n1"], gpus=1, priority="high", started=400.0)
    result = run(nodes, busy, newer, big, small, now=700.0)
    assert decision(result, "default/big").nomination is None
    assert "released" in decision(result, "default/big").message
    assert [b.node for b in result.bindings if b.group == "default/small"] == ["n1"]


def reserved_from(start: float) -> Nomination:
    return Nomination((NodeName("n1"),), "Reserved", 300.0, 900.0, start)


def small_gang(limit: int | None, **fields: object) -> list[object]:
    return [pod("small-0", gpus=6, group="small"),
            group("small", 1, creation=200.0, runtime_limit_seconds=limit, **fields)]


def test_a_reserved_room_backfills_only_a_group_that_ends_by_its_start() -> None:
    """n1 is reserved for `big` from t=1000 while a 1-GPU job of before runs there: a
    6-GPU group whose limit ends by then (700 + 200) is placed on n1 meanwhile; one
    that would run past it (700 + 400), or has no limit, waits and says why. Nothing let
    in is ever evicted for `big`."""
    nodes, busy = two_nodes_partly_busy()
    big = waiting_gang("big", 1, priority="low", creation=0.0, nomination=reserved_from(1000))
    short = run(nodes, busy, big, small_gang(200), now=700.0)
    assert [b.node for b in short.bindings if b.group == "default/small"] == ["n1"]
    assert decision(short, "default/big").nomination == reserved_from(1000)
    assert short.evictions == ()
    for limit, why in ((400, "its runtime limit (400s) ends after that"),
                       (None, "it has no runtime limit")):  # fmt: skip
        long = run(nodes, busy, big, small_gang(limit), now=700.0)
        assert not [b for b in long.bindings if b.node == "n1"]
        message = decision(long, "default/small").message
        assert "1 node is reserved for default/big from 00:16 UTC" in message, message
        assert why in message, message
    off = run(nodes, busy, big, small_gang(200), now=700.0,
              config=SchedulerConfig(backfill=False))  # fmt: skip
    assert not [b for b in off.bindings if b.node == "n1"]
    # the job of before ended: only the backfilled group is on n1, and it stays
    running = running_gang("small", ["n1"], gpus=6, started=700.0)
    running[-1] = replace(running[-1], creation=200.0,  # type: ignore[type-var]
                          runtime_limit_seconds=200)
    later = run(nodes, busy[0], big, running, now=800.0)
    assert later.evictions == ()
    # and the reservation moves earlier: n1 is free once `small` reaches its limit, at 900
    assert decision(later, "default/big").nomination == replace(reserved_from(1000), start=900.0)


def capped(gpus: int) -> QueueInfo:
    return QueueInfo("team-a", capability={"nvidia.com/gpu": gpus * 1000})


def test_a_gang_at_its_queues_capability_preempts_a_lower_priority_gang_of_its_queue() -> None:
    result = run(
        [node("n0"), node("n1")],
        capped(8),
        running_gang("low", ["n0"], queue="team-a"),
        waiting_gang("high", 1, queue="team-a"),
    )
    assert evicted_groups(result) == {"default/low"}  # frees the quota (n1 was free)
    assert {e.reason for e in result.evictions} == {"Preempted"}
    high = decision(result, "default/high")
    assert high.admitted and high.reason == "Preempting" and not result.bindings
    assert high.nomination is not None and len(high.nomination.nodes) == 1


def test_at_capability_nothing_of_equal_priority_or_of_another_queue_is_evicted() -> None:
    result = run(
        [node("n0"), node("n1"), node("n2")],
        [capped(8), QueueInfo("team-b")],
        running_gang("peer", ["n0"], queue="team-a", priority="high"),
        running_gang("other", ["n1"], queue="team-b"),
        waiting_gang("high", 1, queue="team-a"),
    )
    assert result.evictions == ()
    assert decision(result, "default/high").reason == "QueueCapability"


def test_quota_given_back_by_terminating_pods_is_not_evicted_for_again() -> None:
    leaving = running_gang("low", ["n0"], queue="team-a")
    leaving[0] = replace(leaving[0], terminating=True)  # type: ignore[type-var]
    result = run(
        [node("n0"), node("n1"), node("n2")],
        capped(16),
        leaving,
        running_gang("low2", ["n1"], queue="team-a"),
        waiting_gang("high", 1, queue="team-a"),
    )
    assert result.evictions == ()  # low's 8 GPUs are on their way out
    high = decision(result, "default/high")
    assert high.reason == "Preempting" and "terminating" in high.message


def test_at_capability_the_message_says_what_evicting_lower_priority_gangs_would_free() -> None:
    result = run(
        [node("n0"), node("n1"), node("n2"), node("n3")],
        capped(16),
        running_gang("low", ["n0"], queue="team-a"),
        running_gang("peer", ["n1"], queue="team-a", priority="high"),
        waiting_gang("high", 2, queue="team-a"),
    )
    assert result.evictions == ()
    assert decision(result, "default/high").message == (
        "queue team-a: 16 of 16 GPUs used, needs 16; preemption cannot help: queue team-a is "
        "at its capability (16 of 16 GPUs); evicting every lower-priority gang of team-a "
        "would free 8 GPUs, 16 must be freed"
    )


def test_at_capability_with_nothing_lower_in_its_queue_the_message_says_so() -> None:
    result = run(
        [node("n0"), node("n1"), node("n2")],
        [capped(8), QueueInfo("team-b")],
        running_gang("peer", ["n0"], queue="team-a", priority="high"),
        running_gang("other", ["n1"], queue="team-b"),
        waiting_gang("high", 1, queue="team-a"),
    )
    assert decision(result, "default/high").message.endswith(
        "; preemption cannot help: queue team-a is at its capability (8 of 8 GPUs); "
        "team-a runs nothing of lower priority to evict"
    )


def test_at_capability_quota_given_back_but_no_room_on_the_nodes_is_said() -> None:
    result = run(
        [node("n0"), node("n1")],
        [capped(16), QueueInfo("team-b")],
        running_gang("low", ["n0"], queue="team-a"),
        running_gang("other", ["n1"], queue="team-b", priority="high"),
        waiting_gang("high", 2, queue="team-a"),
    )
    assert result.evictions == ()
    assert decision(result, "default/high").message.endswith(
        "; evicting lower-priority gangs of team-a would give that back, "
        "but it would still not fit on the nodes"
    )


def test_at_a_parents_capability_the_parent_is_named() -> None:
    org = QueueInfo("org", capability={"nvidia.com/gpu": 16_000})
    result = run(
        [node("n0"), node("n1"), node("n2"), node("n3")],
        [org, QueueInfo("team-a", parent="org"), QueueInfo("team-b", parent="org")],
        running_gang("low", ["n0"], queue="team-a"),
        running_gang("sibling", ["n1"], queue="team-b"),
        waiting_gang("high", 2, queue="team-a"),
    )
    assert decision(result, "default/high").message.endswith(
        "; preemption cannot help: queue org is at its capability (16 of 16 GPUs); "
        "evicting every lower-priority gang of team-a would free 8 GPUs, 16 must be freed"
    )


def test_at_capability_preemption_policy_never_is_said() -> None:
    result = run(
        [node("n0"), node("n1")],
        capped(8),
        running_gang("low", ["n0"], queue="team-a"),
        waiting_gang("polite", 1, queue="team-a", priority="polite"),
    )
    assert result.evictions == ()
    assert decision(result, "default/polite").message == (
        "queue team-a: 8 of 8 GPUs used, needs 8; "
        "preemption is off for it (preemptionPolicy Never)"
    )


def test_a_checkpointed_older_gang_goes_before_a_younger_one_that_saved_nothing() -> None:
    """"old" started 3 h ago and saved 10 minutes ago: evicting it loses 10 minutes of 8
    GPUs; "young" started 1 h ago and saved nothing: it would lose the whole hour. The old
    order (fewest GPUs, then the newest) took "young"."""
    hour, now = 3600.0, 5 * 3600.0
    old = running_gang("old", ["n0"], started=now - 3 * hour)
    old[-1] = replace(old[-1], checkpointed_at=now - 600)  # type: ignore[arg-type]
    young = running_gang("young", ["n1"], started=now - hour)
    result = run([node("n0"), node("n1")], old, young, waiting_gang("high", 1), now=now)
    assert evicted_groups(result) == {"default/old"}
    (eviction,) = result.evictions
    assert eviction.work_lost_gpu_seconds == 8 * 600
    assert "loses 1.3 GPU-h of work, done since its checkpoint at 04:50 UTC" in eviction.message
    by_size = run([node("n0"), node("n1")], old, young, waiting_gang("high", 1), now=now,
                  config=SchedulerConfig(weigh_work_lost=False))  # fmt: skip
    assert evicted_groups(by_size) == {"default/young"}


def test_a_declared_checkpoint_interval_counts_from_the_last_save() -> None:
    """Saving every 40 minutes, a gang 2 h 10 min in saved at 2 h: it loses 10 minutes, less
    than a gang 30 minutes in that saves nothing."""
    now = 10 * 3600.0
    saver = running_gang("saver", ["n0"], started=now - 130 * 60)
    saver[-1] = replace(saver[-1], checkpoint_interval_seconds=2400)  # type: ignore[arg-type]
    fresh = running_gang("fresh", ["n1"], started=now - 30 * 60)
    result = run([node("n0"), node("n1")], saver, fresh, waiting_gang("high", 1), now=now)
    assert evicted_groups(result) == {"default/saver"}
    assert result.evictions[0].work_lost_gpu_seconds == 8 * 600


def test_a_queue_minimum_runtime_protects_a_gang_that_just_started() -> None:
    now = 1000.0
    queue = QueueInfo("default", preempt_min_runtime_seconds=600)
    young = running_gang("young", ["n0"], started=now - 60)
    result = run([node("n0")], queue, young, waiting_gang("high", 1), now=now)
    assert result.evictions == ()
    message = decision(result, "default/high").message
    assert "ran less than queue default's preemptMinRuntimeSeconds (600s)" in message, message
    later = run([node("n0")], queue, young, waiting_gang("high", 1), now=now + 600)
    assert evicted_groups(later) == {"default/young"}
