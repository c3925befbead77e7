"""The fair-share simulator run (bench/sim/fair_share.py), shortened: team-a alone for a
day, then team-b for half a day. With history, team-b gets more of the GPUs that free
up than team-a does; without it (half-life 0, today's default), each gets about half."""

from __future__ import annotations

from bench.sim import fair_share

from phalanx.core.admission.usage import accrue
from phalanx.core.model.inputs import QueueInfo
from phalanx.sim.queue_usage import SimUsage


def test_team_b_catches_up_only_with_history() -> None:
    results = fair_share.run(0.5)["results"]
    with_decay, without = results["with-decay"], results["without-decay"]
    assert with_decay["team_b_share_first_6h"] > 0.6
    assert without["team_b_share_first_6h"] < 0.5
    assert with_decay["team_b_share_first_6h"] > without["team_b_share_first_6h"] + 0.1


def test_simulated_queues_keep_usage_across_cycles_and_none_at_half_life_zero() -> None:
    queues = (QueueInfo("team-a"),)
    assert SimUsage(0.0).queues(queues, [], 100.0) is queues
    usage = SimUsage(3600.0)
    first = usage.queues(queues, [], 0.0)
    assert first[0].usage == {} and first[0].usage_at == 0.0
    before = accrue({}, {"nvidia.com/gpu": 8000.0}, 60.0, 3600.0)
    usage.usage = {"team-a": before}
    later = usage.queues(queues, [], 120.0)[0]  # nothing ran since: it only decays
    assert later.usage_at == 120.0
    assert 0 < later.usage["nvidia.com/gpu"] < before["nvidia.com/gpu"]
