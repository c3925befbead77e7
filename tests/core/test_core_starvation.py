"""A stream of small groups no longer delays a big gang for ever: after
`starvation_seconds` room is reserved for it, small groups go elsewhere or wait, and it
starts once the work in its way ends. Cycles are driven with an injected clock, the
way the operator drives them (holds written back as the PodGroup's status.nominated)."""

from __future__ import annotations

from dataclasses import replace

from core_builders import group, node, pod

from phalanx.core import PodInfo, SchedulerConfig, Snapshot, run_cycle

STEP = 30.0
RUNS = 90.0  # every small job runs this long


def simulate(config: SchedulerConfig, cycles: int = 40, grouped: bool = False) -> float | None:
    """When the big gang started (None: never), with two 4-GPU jobs arriving per cycle
    (`grouped`: each a group of one, which the reserved room is lent to; evicted jobs
    are gone)."""
    nodes = [node("n0"), node("n1")]
    big = group("big", 2, creation=0.0)
    groups = [big]
    pending: list[PodInfo] = [pod(f"big-{i}", gpus=8, group="big") for i in range(2)]
    running = {  # the stream is already flowing when the big gang arrives
        f"default/early-{i}": (pod(f"early-{i}", gpus=4, node_name=f"n{i}", started_at=0.0), 60.0)
        for i in range(2)
    }
    for step in range(cycles):
        now = step * STEP
        running = {k: v for k, v in running.items() if v[1] > now}
        names = [f"small-{step}-{i}" for i in range(2)]
        if grouped:
            groups.extend(group(name, 1, creation=now) for name in names)
        pending.extend(
            pod(name, gpus=4, creation=now, group=name if grouped else None) for name in names
        )
        snapshot = Snapshot(
            nodes=nodes, pods=[p for p, _ in running.values()] + pending, groups=groups
        )
        result = run_cycle(snapshot, config, now)
        for eviction in result.evictions:
            del running[eviction.pod]
        placed = {b.pod: b.node for b in result.bindings}
        if any(b.group == "default/big" for b in result.bindings):
            return now
        for waiting in [p for p in pending if p.key in placed]:
            pending.remove(waiting)
            bound = replace(waiting, node_name=placed[waiting.key], phase="Running", started_at=now)
            running[waiting.key] = (bound, now + RUNS)
        decision = result.decision("default/big")
        groups[0] = replace(big, nomination=decision.nomination if decision else None)
    return None


def test_without_reservations_the_stream_keeps_the_big_gang_waiting() -> None:
    assert simulate(SchedulerConfig(starvation_seconds=float("inf"))) is None


def test_with_reservations_the_big_gang_starts_soon_after_starvation_seconds() -> None:
    started = simulate(SchedulerConfig(starvation_seconds=300.0))
    assert started is not None and 300.0 <= started <= 300.0 + RUNS + STEP


def test_small_groups_use_the_reserved_room_meanwhile_and_the_big_gang_still_starts() -> None:
    """The reserved room is lent to the stream while the jobs in its way run, and taken
    back (they are evicted) once nothing else is in the way: no later than above."""
    started = simulate(SchedulerConfig(starvation_seconds=300.0), grouped=True)
    assert started is not None and 300.0 <= started <= 300.0 + RUNS + STEP
