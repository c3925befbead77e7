"""The fair-share simulator run (bench/sim/fair_share.py), shortened: team-a alone for a
day, then team-b for half a day. With history, team-b's gangs go first until the usages
are even: every gang started until then is team-b's, and no team-a gang starts while
team-b, with less usage, has one waiting that fits; without it (half-life 0, today's
default) each gets about half, team-a's gangs start ahead of team-b's, and the usages do
not even out."""

from __future__ import annotations

import json
from pathlib import Path

from bench.sim import fair_share

from phalanx.core.admission.usage import accrue
from phalanx.core.model.inputs import QueueInfo
from phalanx.sim.queue_usage import SimUsage


def test_team_b_goes_first_until_even_only_with_history(tmp_path: Path) -> None:
    report = fair_share.run(0.5)
    with_decay, without = report["results"]["with-decay"], report["results"]["without-decay"]
    assert with_decay["hours_to_even_usage"] is not None
    first = with_decay["until_even"]
    assert first["gangs_started"] > 0 and first["team_a_ahead"] == 0
    assert first["team_b_share_of_gangs"] == first["team_b_share_of_freed_gpus"] == 1.0
    assert without["hours_to_even_usage"] is None
    assert without["until_even"]["team_a_ahead"] > 0
    assert without["until_even"]["team_b_share_of_freed_gpus"] < 0.6
    (tmp_path / "fair-share.json").write_text(json.dumps(report))
    shown = fair_share.generated(tmp_path)
    line = shown.blocks["fair-share"]
    assert "team-a started ahead of it 0 times" in line and line.count("\n") == 1
    assert "| decayed usage + allocation (half-life 6 h) |" in shown.page


def test_a_waiting_gang_fits_the_room_of_one_no_smaller() -> None:
    big = fair_share.JobSpec(name="big", arrival=0.0, duration=1.0, pods=4, gpus_per_pod=8)
    small = fair_share.JobSpec(name="small", arrival=0.0, duration=1.0, pods=2, gpus_per_pod=8)
    assert fair_share.fits_in(small, big) and fair_share.fits_in(big, big)
    assert not fair_share.fits_in(big, small)


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
