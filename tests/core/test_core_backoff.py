"""Backoff after a timeout is the core's policy: a gang past scheduleTimeoutSeconds is
tried less and less often, says Timeout, and is placed as soon as a try finds room."""

from __future__ import annotations

from core_builders import gang, node

from phalanx.core import SchedulerConfig, Snapshot, run_cycle
from phalanx.core.model.backoff import Backoff
from phalanx.core.model.result import CycleResult
from phalanx.core.model.status import Reason

CONFIG = SchedulerConfig(backoff_initial_seconds=10, backoff_max_seconds=30)


def try_at(now: float, backoffs: dict, free_nodes: int = 1) -> CycleResult:
    big, pods = gang("big", 2, gpus=8, schedule_timeout_seconds=5, creation=0.0)
    nodes = [node(f"n{i}") for i in range(free_nodes)]
    snapshot = Snapshot(nodes=nodes, pods=pods, groups=[big], backoffs=backoffs)
    return run_cycle(snapshot, CONFIG, now)


def test_a_gang_within_its_timeout_has_no_backoff():
    decision = try_at(3.0, {}).decision("default/big")
    assert decision is not None and decision.backoff is None
    assert decision.reason != Reason.TIMEOUT and not decision.held


def test_past_its_timeout_a_gang_says_timeout_and_waits_doubling_up_to_the_maximum():
    first = try_at(6.0, {}).decision("default/big")
    assert first is not None and first.timed_out and first.reason == Reason.TIMEOUT
    assert first.backoff == Backoff(10, 16.0)
    assert "not placed within scheduleTimeoutSeconds" in first.message
    held = try_at(12.0, {first.group: first.backoff}).decision("default/big")
    assert held is not None and held.held and not held.timed_out
    assert held.backoff == first.backoff  # kept while held
    second = try_at(16.0, {first.group: first.backoff}).decision("default/big")
    assert second is not None and second.backoff == Backoff(20, 36.0)
    third = try_at(36.0, {first.group: second.backoff}).decision("default/big")
    assert third is not None and third.backoff == Backoff(30, 66.0)  # capped


def test_a_held_gang_is_not_placed_even_when_room_appears_and_is_once_its_wait_ends():
    backoffs = {"default/big": Backoff(10, 16.0)}
    held = try_at(12.0, backoffs, free_nodes=2)
    assert held.bindings == ()
    tried = try_at(16.0, backoffs, free_nodes=2)
    assert len(tried.bindings) == 2
    decision = tried.decision("default/big")
    assert decision is not None and decision.scheduled and decision.backoff is None
