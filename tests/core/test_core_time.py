"""Time in a cycle: runtime limits (enforced, defaulted, capped by the queue), the start
each waiting gang is expected by, and the reservation the first waiting gang of a queue
holds from its expected start."""

from __future__ import annotations

from dataclasses import replace

from core_builders import decision, group, node, pod, snapshot_of
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.core import CycleResult, PodInfo, QueueInfo, SchedulerConfig, run_cycle
from phalanx.core.model.names import NodeName
from phalanx.core.model.nomination import Nomination


def running(name: str, node_name: str, started: float, limit: int | None,
            gpus: int = 8, queue: str = "default") -> list[object]:  # fmt: skip
    return [pod(f"{name}-0", gpus=gpus, group=name, node_name=node_name, started_at=started),
            group(name, 1, runtime_limit_seconds=limit, queue=queue)]  # fmt: skip


def waiting(name: str, gpus: int = 8, limit: int | None = None, creation: float = 0.0,
            queue: str = "default") -> list[object]:  # fmt: skip
    return [pod(f"{name}-0", gpus=gpus, group=name),
            group(name, 1, runtime_limit_seconds=limit, creation=creation, queue=queue)]


def cycle(*items: object, now: float, estimate: bool = False,
          config: SchedulerConfig | None = None) -> CycleResult:  # fmt: skip
    flat: list[object] = []
    for item in items:
        flat.extend(item if isinstance(item, list) else [item])
    return run_cycle(snapshot_of(flat), config, now, estimate=estimate)


def test_a_gang_past_its_runtime_limit_is_evicted_with_the_reason() -> None:
    gang = running("job", "n0", started=100.0, limit=600)
    assert cycle([node("n0")], gang, now=699.0).evictions == ()
    (eviction,) = cycle([node("n0")], gang, now=700.0).evictions
    assert (eviction.pod, eviction.reason, eviction.preemptor) == (
        "default/job-0", "RuntimeLimitExceeded", "default/job")
    assert "ran past its runtime limit of 600s (started at 00:01 UTC)" in eviction.message


def test_a_queue_gives_its_default_else_its_maximum_and_refuses_more() -> None:
    default = QueueInfo("default", default_runtime_limit_seconds=300,
                        max_runtime_limit_seconds=900)  # fmt: skip
    unset = running("job", "n0", started=0.0, limit=None)
    assert cycle([node("n0")], default, unset, now=300.0).evictions != ()
    capped = QueueInfo("default", max_runtime_limit_seconds=900)
    assert cycle([node("n0")], capped, unset, now=899.0).evictions == ()
    assert cycle([node("n0")], capped, unset, now=900.0).evictions != ()
    greedy = cycle([node("n0")], capped, waiting("greedy", limit=3600), now=0.0)
    refused = decision(greedy, "default/greedy")
    assert refused.reason == "InvalidSpec" and not greedy.bindings
    assert "runtimeLimitSeconds 3600 is above the maxRuntimeLimitSeconds 900" in refused.message


def test_each_waiting_gang_is_expected_when_the_work_in_its_way_reaches_its_limit() -> None:
    """n0 frees at 1000, n1 at 2000: the first gang is expected at 1000 (waiting for
    `a`), the second, which cannot count on n0 (the first takes it, for ever: it has no
    limit), at 2000."""
    nodes = [node("n0"), node("n1")]
    result = cycle(nodes, running("a", "n0", 0.0, 1000), running("b", "n1", 0.0, 2000),
                   waiting("first", creation=1.0), waiting("second", creation=2.0),
                   now=10.0, estimate=True)  # fmt: skip
    starts = {e.group: e for e in result.expected_starts}
    first, second = starts["default/first"], starts["default/second"]
    assert (first.at, first.waits_for) == (1000.0, ("default/a",))
    assert "expected to start by 00:16 UTC, when 1 gang reaches its limit" in first.message
    assert (second.at, second.waits_for) == (2000.0, ("default/b",))
    plain = cycle(nodes, running("a", "n0", 0.0, 1000), running("b", "n1", 0.0, 2000),
                  waiting("first", creation=1.0), now=10.0)  # fmt: skip
    assert plain.expected_starts == ()


def test_a_gang_of_two_shapes_counts_on_no_room_planned_for_those_before_it() -> None:
    """`first` (one shape: planned from the room over time) reserves n0, freed at 1000,
    and is planned there until 1500; planned, it needs its reservation no more.
    `mixed` (a launcher and a worker: placed the old way, on the state with `first` put
    in) needs both nodes: 2000, when `b` leaves n1. `third` (one shape again) counts on
    neither node before `mixed` ends at 2600."""
    nodes = [node("n0"), node("n1")]
    mixed = [pod("mixed-0", gpus=8, group="mixed"), pod("mixed-1", gpus=8, cpu=2, group="mixed"),
             group("mixed", 2, runtime_limit_seconds=600, creation=2.0)]  # fmt: skip
    result = cycle(nodes, running("a", "n0", 0.0, 1000), running("b", "n1", 0.0, 2000),
                   waiting("first", limit=500, creation=1.0), mixed,
                   waiting("third", limit=100, creation=3.0), now=10.0,
                   estimate=True)  # fmt: skip
    starts = {e.group: (e.at, e.waits_for) for e in result.expected_starts}
    assert starts["default/first"] == (1000.0, ("default/a",))
    assert starts["default/mixed"] == (2000.0, ("default/a", "default/b", "default/first"))
    assert starts["default/third"] == (2600.0, ("default/a", "default/first", "default/mixed"))


def test_a_gang_behind_work_with_no_limit_has_no_estimate() -> None:
    result = cycle([node("n0")], running("forever", "n0", 0.0, None), waiting("next"),
                   now=10.0, estimate=True)  # fmt: skip
    (expected,) = result.expected_starts
    assert expected.at is None and "no runtime limit" in expected.message


def test_the_first_waiting_gang_reserves_its_room_from_its_expected_start() -> None:
    """No waiting past starvation_seconds: with limits to plan with, the room n0 frees at
    1000 is reserved for `big` at once; a 2-GPU job that would end at 1010 is kept
    out of it, one that ends at 510 backfills it."""
    nodes = [node("n0"), node("n1")]
    work = [running("a", "n0", 0.0, 1000, gpus=6), running("b", "n1", 0.0, 5000)]
    result = cycle(nodes, *work, waiting("big", creation=1.0), now=10.0)
    held = decision(result, "default/big").nomination
    assert held is not None and held.reason == "Reserved"
    assert (held.nodes, held.start) == (("n0",), 1000.0)
    big = replace(group("big", 1, creation=1.0), nomination=held)
    late = [pod("late-0", gpus=2, group="late"),
            group("late", 1, runtime_limit_seconds=1000, creation=5.0)]  # fmt: skip
    kept = cycle(nodes, *work, pod("big-0", gpus=8, group="big"), big, late, now=10.0)
    assert not kept.bindings
    assert "reserved for default/big from 00:16 UTC" in decision(kept, "default/late").message
    early = [pod("late-0", gpus=2, group="late"),
             group("late", 1, runtime_limit_seconds=500, creation=5.0)]  # fmt: skip
    backfilled = cycle(nodes, *work, pod("big-0", gpus=8, group="big"), big, early, now=10.0)
    assert [(b.pod, b.node) for b in backfilled.bindings] == [("default/late-0", "n0")]


def test_the_gang_first_in_line_reserves_too_after_a_later_gang_of_its_queue() -> None:
    """`young` reserved n0 from 1000 (until its limit, 1300) while `old`, first in line
    (same priority, older), had no hold (its own was released for a cycle, say). `old`
    reserves too, planned after `young`'s room frees: n0 from 1300, not n1 at 5000;
    `young` keeps its reservation and its start."""
    nodes = [node("n0"), node("n1")]
    work = [running("a", "n0", 0.0, 1000), running("b", "n1", 0.0, 5000)]
    first = cycle(nodes, *work, waiting("young", limit=300, creation=2.0), now=10.0)
    held = decision(first, "default/young").nomination
    assert held is not None and held.reason == "Reserved" and held.start == 1000.0
    young = [pod("young-0", gpus=8, group="young"),
             replace(group("young", 1, runtime_limit_seconds=300, creation=2.0),
                     nomination=held)]  # fmt: skip
    result = cycle(nodes, *work, young, waiting("old", creation=1.0), now=20.0)
    holds = {key: decision(result, key).nomination for key in ("default/old", "default/young")}
    assert {k: (h.reason, h.nodes, h.start) for k, h in holds.items() if h is not None} == {
        "default/old": ("Reserved", ("n0",), 1300.0),
        "default/young": ("Reserved", ("n0",), 1000.0)}
    behind = cycle(nodes, *work, young, waiting("later", creation=3.0), now=20.0)
    assert decision(behind, "default/later").nomination is None  # behind the holder


def test_a_group_that_fits_outside_reserved_room_is_placed_there() -> None:
    """`big` reserves n0 (6 GPUs busy until 1000); `late` ends by then, so it may use n0,
    and packing would pick it (the fuller node), but it fits on n1: it goes there, and
    n0 is free for `big` as soon as `a` leaves."""
    nodes = [node("n0"), node("n1")]
    work = [running("a", "n0", 0.0, 1000, gpus=6), running("b", "n1", 0.0, 5000, gpus=4)]
    first = cycle(nodes, *work, waiting("big", creation=1.0), now=10.0)
    held = decision(first, "default/big").nomination
    assert held is not None and held.nodes == ("n0",)
    big = [pod("big-0", gpus=8, group="big"),
           replace(group("big", 1, creation=1.0), nomination=held)]  # fmt: skip
    result = cycle(nodes, *work, big, waiting("late", gpus=2, limit=500, creation=5.0),
                   now=10.0)  # fmt: skip
    assert [(b.pod, b.node) for b in result.bindings] == [("default/late-0", "n1")]


def test_a_reservation_is_never_planned_in_another_reservations_room() -> None:
    """`a-big` (team-a) reserves n0 from 1000. `b-big` (team-b) ends by then, so it could
    use n0 now, but not from a start of its own: it reserves n1, from 2000."""
    nodes = [node("n0"), node("n1"), QueueInfo("team-a"), QueueInfo("team-b")]
    work = [running("a", "n0", 0.0, 1000), running("b", "n1", 0.0, 2000)]
    result = cycle(nodes, *work, waiting("a-big", creation=1.0, queue="team-a"),
                   waiting("b-big", limit=100, creation=2.0, queue="team-b"),
                   now=10.0)  # fmt: skip
    holds = {key: decision(result, key).nomination for key in ("default/a-big", "default/b-big")}
    assert {k: (h.nodes, h.start) for k, h in holds.items() if h is not None} == {
        "default/a-big": (("n0",), 1000.0), "default/b-big": (("n1",), 2000.0)}


def test_a_gang_is_planned_in_another_reservations_room_after_its_holder_ends() -> None:
    """`a-big` reserves n0 from 1000 and ends by 1300 (its limit); n1 runs work with no
    limit. `b-big` has no start but n0 once `a-big` is done: it reserves n0 from 1300."""
    nodes = [node("n0"), node("n1"), QueueInfo("team-a"), QueueInfo("team-b")]
    work = [running("a", "n0", 0.0, 1000), running("forever", "n1", 0.0, None)]
    result = cycle(nodes, *work, waiting("a-big", limit=300, creation=1.0, queue="team-a"),
                   waiting("b-big", limit=100, creation=2.0, queue="team-b"),
                   now=10.0)  # fmt: skip
    holds = {key: decision(result, key).nomination for key in ("default/a-big", "default/b-big")}
    assert {k: (h.nodes, h.start) for k, h in holds.items() if h is not None} == {
        "default/a-big": (("n0",), 1000.0), "default/b-big": (("n0",), 1300.0)}


def reserved_on(nodes: tuple[str, ...], start: float, since: float = 0.0,
                expires: float = 1e9) -> Nomination:  # fmt: skip
    return Nomination(tuple(NodeName(n) for n in nodes), "Reserved", since, expires, start)


def test_a_gang_holding_a_reservation_uses_room_reserved_after_it_backfill_off() -> None:
    """`old` reserved n0 from 1300, planned after `young` (n0 from 1000, limit 300). At
    1000, with backfill off, `young` still goes on n0: it holds a reservation of its own,
    and `old`'s plan counted on it leaving by 1300 (kept off, each kept the other out)."""
    nodes = [node("n0"), node("n1")]
    young = [pod("young-0", gpus=8, group="young"),
             replace(group("young", 1, runtime_limit_seconds=300, creation=2.0),
                     nomination=reserved_on(("n0",), 1000.0))]  # fmt: skip
    old = [pod("old-0", gpus=8, group="old"),
           replace(group("old", 1, creation=1.0), nomination=reserved_on(("n0",), 1300.0))]
    config = SchedulerConfig(backfill=False)
    result = cycle(nodes, running("b", "n1", 0.0, 5000), young, old, now=1000.0,
                   config=config)  # fmt: skip
    assert [(b.pod, b.node) for b in result.bindings] == [("default/young-0", "n0")]


def test_a_reservation_a_term_past_its_start_is_planned_afresh() -> None:
    """`big`'s reservation of n0 from 1000 ran out at 1200 and nothing new started there,
    but `big` has not started a term (300 s) past its start: it is released for a cycle
    (something unplanned is in its way), where before 1300 it is renewed."""
    nodes = [node("n0")]
    stuck = running("stuck", "n0", 0.0, None)
    big = [pod("big-0", gpus=8, group="big"),
           replace(group("big", 1, creation=1.0),
                   nomination=reserved_on(("n0",), 1000.0, since=900.0, expires=1200.0))]
    kept = decision(cycle(nodes, stuck, big, now=1250.0), "default/big")
    assert kept.nomination is not None and kept.nomination.start == 1000.0
    released = decision(cycle(nodes, stuck, big, now=1300.0), "default/big")
    assert released.nomination is None and "released" in released.message


@st.composite
def busy_nodes(draw: st.DrawFn) -> list[object]:
    """Two nodes with running one-pod gangs on given devices (limits ending at random),
    small gangs to place this cycle, and a whole-node gang that must wait."""
    items: list[object] = [node("n0"), node("n1")]
    for host in ("n0", "n1"):
        free = list(range(8))
        for i in range(draw(st.integers(1, 4))):
            count = draw(st.integers(1, 2))
            if len(free) < count + 1:
                break
            devices = tuple(sorted(draw(st.permutations(free)))[:count])
            free = [d for d in free if d not in devices]
            name = f"run-{host}-{i}"
            items += [pod(f"{name}-0", gpus=count, group=name, node_name=host,
                          started_at=0.0, gpu_devices=devices),
                      group(name, 1, runtime_limit_seconds=draw(st.integers(100, 5000)))]
    for i in range(draw(st.integers(1, 4))):
        name = f"small{i}"
        items += [pod(f"{name}-0", gpus=1, group=name),
                  group(name, 1, runtime_limit_seconds=draw(st.integers(50, 6000)),
                        creation=10.0 + i)]
    return items + waiting("big", creation=1.0)


@settings(max_examples=200, deadline=None)
@given(busy_nodes())
def test_moving_work_away_to_plan_a_start_never_gives_two_pods_one_gpu(
    items: list[object],
) -> None:
    """The reservation's search takes running gangs away (in the order they end) and puts
    them back, gangs bound this very cycle among them. Put back, no GPU may be held twice
    (a bound pod once took a device a running pod taken away later held: two pods on one
    GPU in the simulator)."""
    result = cycle(*items, now=10.0)
    held: dict[tuple[str, int], str] = {}
    for item in items:
        if isinstance(item, PodInfo) and item.node_name:
            for device in item.gpu_devices:
                held[(item.node_name, device)] = item.name
    for binding in result.bindings:
        for share in binding.devices:
            where = (str(binding.node), share.index)
            assert where not in held, (binding, held[where])
            held[where] = str(binding.pod)
