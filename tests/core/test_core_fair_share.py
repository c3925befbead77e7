"""Fair sharing over time (#32 item 4): decayed usage (core/admission/usage.py), its
place in the order of queues, and the Queue fields it is read from."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from core_builders import GPU, decision, group, node, pod, snapshot_of
from hypothesis import assume, given
from hypothesis import strategies as st

from phalanx.core import QueueInfo, SchedulerConfig
from phalanx.core.admission.usage import WINDOW, accrue, decay, history_share, kept
from phalanx.core.cycle import run_cycle
from phalanx.core.model.errors import InvalidObject
from phalanx.core.parse import parse_queue

HOUR = 3600.0
half_lives = st.floats(min_value=1.0, max_value=30 * 86400.0)
seconds = st.floats(min_value=0.0, max_value=30 * 86400.0)
amounts = st.floats(min_value=0.0, max_value=1e12)
usages = st.dictionaries(st.sampled_from([GPU, "cpu", "memory"]), amounts, max_size=3)


def close(left: dict[str, float], right: dict[str, float]) -> bool:
    names = set(left) | set(right)
    return all(math.isclose(left.get(n, 0.0), right.get(n, 0.0), rel_tol=1e-9, abs_tol=1e-6)
               for n in names)


@given(usages, seconds, seconds, half_lives)
def test_usage_only_decays_while_nothing_runs(
    usage: dict[str, float], dt: float, more: float, half_life: float
) -> None:
    earlier, later = decay(usage, dt, half_life), decay(usage, dt + more, half_life)
    for resource, amount in usage.items():
        assert later.get(resource, 0.0) <= earlier.get(resource, 0.0) <= amount


@given(usages, usages, seconds, half_lives)
def test_running_adds_exactly_the_allocation_integrated_and_decayed(
    usage: dict[str, float], allocation: dict[str, float], dt: float, half_life: float
) -> None:
    """What a running allocation adds over dt is its integral, each second decayed from
    when it ran: between a * dt decayed all of dt and a * dt, on top of the old usage
    decayed; and no more is added for the same usage while nothing runs."""
    after = accrue(usage, allocation, dt, half_life)
    decayed = decay(usage, dt, half_life)
    for resource in set(usage) | set(allocation):
        gained = after.get(resource, 0.0) - decayed.get(resource, 0.0)
        a = allocation.get(resource, 0.0)
        tau = half_life / math.log(2)
        assert math.isclose(gained, -a * tau * math.expm1(-dt / tau), rel_tol=1e-9,
                            abs_tol=1e-3)
        assert a * dt * kept(dt, half_life) - 1e-3 <= gained <= a * dt * (1 + 1e-9) + 1e-3
    assert close(accrue(usage, {}, dt, half_life), decayed)


@given(usages, usages, seconds, seconds, half_lives)
def test_accrual_is_exact_however_the_time_is_split(
    usage: dict[str, float], allocation: dict[str, float], first: float, second: float,
    half_life: float,
) -> None:
    """Integrated exactly, not in Euler steps: updating every 30 s or once gives the same."""
    steps = accrue(accrue(usage, allocation, first, half_life), allocation, second, half_life)
    assert close(steps, accrue(usage, allocation, first + second, half_life))


def test_half_a_life_later_half_is_left() -> None:
    assert decay({GPU: 8.0}, 6 * HOUR, 6 * HOUR) == pytest.approx({GPU: 4.0})
    assert accrue({GPU: 8.0}, {GPU: 1.0}, 10.0, 0.0) == {}  # half-life 0 keeps nothing


def test_history_share_is_usage_over_what_the_cluster_gives_in_the_window() -> None:
    """Usage and allocation weigh in the same unit: a queue that ran 4 of 16 GPUs for an
    hour counts as much as one holding all 16 for a quarter of that hour (over WINDOW)."""
    half_life = 2 * HOUR
    usage = accrue({}, {GPU: 4000.0}, HOUR, half_life)
    queue = QueueInfo("a", usage=usage, usage_at=0.0, usage_half_life_seconds=half_life)
    expected = usage[GPU] / (16000 * WINDOW)
    assert history_share(queue, {GPU: 16000}, 0.0, 0.0) == pytest.approx(expected)
    later = history_share(queue, {GPU: 16000}, half_life, 0.0)
    assert later == pytest.approx(expected / 2)  # decayed to the cycle's now
    assert history_share(replace(queue, weight=2), {GPU: 16000}, 0.0, 0.0) == pytest.approx(
        expected / 2)
    assert history_share(queue, {GPU: 16000}, 0.0, 0.0) == pytest.approx(
        history_share(replace(queue, usage_half_life_seconds=60 * HOUR), {GPU: 16000}, 0.0,
                      0.0))  # the half-life decays usage, it does not scale it


def two_teams(a_usage: dict[str, float], b_usage: dict[str, float],
              half_life: float | None = None) -> list[object]:
    """team-a and team-b, 2 GPUs free for one of their two waiting gangs; team-b already
    runs 2 GPUs, team-a nothing (so DRF alone prefers team-a)."""
    return [
        node("n1", gpus=4),
        QueueInfo("team-a", usage=a_usage, usage_at=0.0, usage_half_life_seconds=half_life),
        QueueInfo("team-b", usage=b_usage, usage_at=0.0, usage_half_life_seconds=half_life),
        group("b-run", 1, queue="team-b"),
        pod("b-run", gpus=2, group="b-run", node_name="n1"),
        group("a-new", 1, queue="team-a", creation=1.0),
        pod("a-new", gpus=2, group="a-new"),
        group("b-new", 1, queue="team-b", creation=2.0),
        pod("b-new", gpus=2, group="b-new"),
    ]


def admitted_first(objects: list[object], config: SchedulerConfig, now: float) -> str:
    return run_cycle(snapshot_of(objects), config, now).bindings[0].group


def test_a_queue_that_ran_for_a_day_waits_behind_one_that_did_not() -> None:
    """team-a had the 4 GPUs for a day; team-b holds 2 now. DRF on what runs now picks
    team-a (fails with the old order); with its past usage counted, team-b goes first,
    and once that usage has decayed (many half-lives later) team-a does again."""
    half_life = 6 * HOUR
    day = accrue({}, {GPU: 4000.0}, 24 * HOUR, half_life)
    objects = two_teams(day, {}, None)
    with_history = SchedulerConfig(usage_half_life_seconds=half_life)
    assert admitted_first(objects, SchedulerConfig(), 0.0) == "default/a-new"
    assert admitted_first(objects, with_history, 0.0) == "default/b-new"
    assert admitted_first(objects, with_history, 20 * half_life) == "default/a-new"


def test_less_usage_goes_first_however_much_more_the_queue_runs_now() -> None:
    """Both teams ran for a day, team-b three quarters of what team-a ran; team-b holds 2
    of the 4 GPUs now, team-a none. The first key (usage over the mean life + share now)
    put team-a first: team-b's lead now (0.5) outweighed its deficit in history (0.23),
    and team-b only ever got about (1 + gap) / 2 of the room. Usage + allocation over a
    minute puts team-b first, until the usages even out."""
    half_life = 6 * HOUR
    a_day = accrue({}, {GPU: 4000.0}, 24 * HOUR, half_life)
    less = accrue({}, {GPU: 3000.0}, 24 * HOUR, half_life)
    objects = two_teams(a_day, less, half_life)
    assert admitted_first(objects, SchedulerConfig(), 0.0) == "default/b-new"
    even = two_teams(a_day, a_day, half_life)  # even usage: what runs now decides (DRF)
    assert admitted_first(even, SchedulerConfig(), 0.0) == "default/a-new"


gpu_usage = st.floats(min_value=0.0, max_value=8000.0 * 86400)


@given(gpu_usage, gpu_usage, st.integers(0, 3), st.integers(0, 3), seconds)
def test_the_queue_with_less_usage_plus_allocation_is_admitted_first(
    a_usage: float, b_usage: float, a_running: int, b_running: int, since: float
) -> None:
    """Whatever the two queues ran and run: the first gang admitted is of the queue
    whose decayed usage + allocation x WINDOW is lower (GPU-seconds)."""
    half_life = 6 * HOUR
    usage = {"team-a": a_usage, "team-b": b_usage}
    objects: list[object] = [node("n1", gpus=8)]
    for team, running in (("team-a", a_running), ("team-b", b_running)):
        objects.append(QueueInfo(team, usage={GPU: usage[team]} if usage[team] else {},
                                 usage_at=0.0))
        objects.append(group(f"{team}-new", 1, queue=team, creation=1.0))
        objects.append(pod(f"{team}-new", gpus=1, group=f"{team}-new"))
        if running:
            objects.append(group(f"{team}-run", running, queue=team))
            objects.extend(pod(f"{team}-run-{i}", gpus=1, group=f"{team}-run", node_name="n1")
                           for i in range(running))
    keep = kept(since, half_life)
    key = {team: usage[team] * keep + running * 1000.0 * WINDOW
           for team, running in (("team-a", a_running), ("team-b", b_running))}
    assume(not math.isclose(key["team-a"], key["team-b"], rel_tol=1e-6, abs_tol=1.0))
    first = min(key, key=key.__getitem__)
    config = SchedulerConfig(usage_half_life_seconds=half_life)
    assert admitted_first(objects, config, since) == f"default/{first}-new"


def starving(a_usage: dict[str, float], b_usage: dict[str, float]) -> list[object]:
    """Team-a's 8-GPU gang waited since 0 on two full nodes; team-b's 4-GPU gang started
    at 500 on n1 (it passed the big one), and team-b waits with another."""
    return [
        node("n0", gpus=8), node("n1", gpus=8),
        QueueInfo("team-a", usage=a_usage, usage_at=0.0),
        QueueInfo("team-b", usage=b_usage, usage_at=0.0),
        group("a-run", 1, queue="team-a"),
        pod("a-run", gpus=8, group="a-run", node_name="n0", started_at=10.0),
        group("b-run", 2, queue="team-b"),
        *(pod(f"b-run-{i}", gpus=4, group="b-run", node_name="n1", started_at=500.0)
          for i in range(2)),
        group("a-big", 1, queue="team-a", creation=0.0),
        pod("a-big", gpus=8, group="a-big"),
        group("b-next", 1, queue="team-b", creation=600.0),
        pod("b-next", gpus=8, group="b-next"),
    ]


def test_a_gang_behind_a_queue_with_less_usage_is_not_starving() -> None:
    """Passed by team-b's gang, team-a's big gang would reserve room (and keep it from
    team-b, which is owed it); with team-a's day of usage it waits its turn instead.
    At half-life 0, or once team-b has used more, it reserves as before."""
    half_life = 6 * HOUR
    a_day = accrue({}, {GPU: 8000.0}, 24 * HOUR, half_life)
    config = SchedulerConfig(usage_half_life_seconds=half_life)
    plain = run_cycle(snapshot_of(starving(a_day, {})), SchedulerConfig(), 1000.0)
    assert decision(plain, "default/a-big").nomination is not None
    behind = run_cycle(snapshot_of(starving(a_day, {})), config, 1000.0)
    assert decision(behind, "default/a-big").nomination is None
    ahead = run_cycle(snapshot_of(starving({}, a_day)), config, 1000.0)
    assert decision(ahead, "default/a-big").nomination is not None


def test_a_queue_sets_its_own_half_life() -> None:
    day = accrue({}, {GPU: 4000.0}, 24 * HOUR, 6 * HOUR)
    own = two_teams(day, {}, half_life=6 * HOUR)
    assert admitted_first(own, SchedulerConfig(), 0.0) == "default/b-new"
    none = two_teams(day, {}, half_life=0.0)  # 0 overrides a global half-life
    assert admitted_first(none, SchedulerConfig(usage_half_life_seconds=6 * HOUR), 0.0) == (
        "default/a-new")


queue_names = st.sampled_from(["q0", "q1", "q2"])


@given(
    st.lists(st.tuples(queue_names, st.integers(1, 4), st.integers(0, 3)), min_size=1,
             max_size=8),
    st.dictionaries(queue_names, usages),
    st.dictionaries(queue_names, st.integers(1, 3)),
    seconds,
)
def test_half_life_zero_orders_queues_as_without_fair_sharing_over_time(
    gangs: list[tuple[str, int, int]], usage: dict[str, dict[str, float]],
    weights: dict[str, int], now: float,
) -> None:
    """Whatever usage the queues' status holds, half-life 0 decides as if none existed:
    the same bindings, in the same order."""
    objects: list[object] = [node("n1", gpus=8), node("n2", gpus=4)]
    for i, (queue, gpus, running) in enumerate(gangs):
        name = f"g{i}"
        objects.append(group(name, 1, queue=queue, creation=float(i)))
        objects.append(pod(name, gpus=gpus, group=name, node_name="n1" if running == 3 else None))
    plain = [QueueInfo(q, weight=weights.get(q, 1)) for q in ("q0", "q1", "q2")]
    kept_usage = [replace(q, usage=usage.get(q.name, {}), usage_at=now / 2) for q in plain]
    config = SchedulerConfig(usage_half_life_seconds=0.0)
    without = run_cycle(snapshot_of([*objects, *plain]), SchedulerConfig(), now)
    with_usage = run_cycle(snapshot_of([*objects, *kept_usage]), config, now)
    assert [(b.pod, b.node) for b in with_usage.bindings] == [
        (b.pod, b.node) for b in without.bindings]


def queue_object(spec: dict[str, object], status: dict[str, object] | None = None) -> dict[
        str, object]:
    body: dict[str, object] = {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "Queue",
                               "metadata": {"name": "team-a"}, "spec": spec}
    if status is not None:
        body["status"] = status
    return body


def test_parse_reads_usage_from_status_in_whole_units() -> None:
    info = parse_queue(queue_object(
        {"fairSharing": {"usageHalfLifeSeconds": 3600}},
        {"usage": {GPU: 7200.5, "cpu": "bad", "memory": -1},
         "usageUpdatedAt": "2026-12-05T18:00:00.250000Z"}))
    assert info.usage_half_life_seconds == 3600.0
    assert info.usage == {GPU: 7200500.0}  # milli-GPU-seconds; unreadable entries dropped
    assert info.usage_at == pytest.approx(1796493600.25)


def test_parse_without_fair_sharing_fields_keeps_no_history() -> None:
    info = parse_queue(queue_object({}, {"usageUpdatedAt": "yesterday"}))
    assert (info.usage, info.usage_at, info.usage_half_life_seconds) == ({}, 0.0, None)


def test_a_negative_half_life_is_refused() -> None:
    with pytest.raises(InvalidObject, match="usageHalfLifeSeconds"):
        parse_queue(queue_object({"fairSharing": {"usageHalfLifeSeconds": -5}}))
