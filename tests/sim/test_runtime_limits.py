"""Runtime limits in the simulator: what jobs declare (`limits` of a trace) and what the
engine does at a limit (the job is stopped, its work lost, cause Limit)."""

from __future__ import annotations

from dataclasses import replace

from phalanx.sim.engine import SimConfig, simulate
from phalanx.sim.policies import make_policy
from phalanx.sim.slowdown import SlowdownModel
from phalanx.sim.trace import jobs_from_spec
from phalanx.sim.workloads.mix import ROUND_SECONDS, round_up

from .conftest import job, make_cluster

TRACE = {"generator": "synthetic", "jobs": 200, "load": 1.0, "durationMedianSeconds": 3600}


def test_declared_limits_cover_the_runtime_at_the_widest_span_and_are_round_values() -> None:
    cluster = make_cluster({"r0": ["n0", "n1"], "r1": ["n2", "n3"]})
    over = jobs_from_spec({**TRACE, "limits": {"accuracy": [0.1, 1.0], "noLimitShare": 0.2}},
                          cluster, seed=3)  # fmt: skip
    exact = jobs_from_spec({**TRACE, "limits": {"exact": True, "noLimitShare": 0.2}},
                           cluster, seed=3)  # fmt: skip
    plain = jobs_from_spec(TRACE, cluster, seed=3)
    assert [replace(j, runtime_limit_seconds=None) for j in over] == plain  # nothing else moves
    unlimited = [j for j in over if j.runtime_limit_seconds is None]
    assert 0.1 < len(unlimited) / len(over) < 0.3
    assert {j.name for j in unlimited} == {j.name for j in exact if j.runtime_limit_seconds is None}
    for declared, known in zip(over, exact, strict=True):
        if declared.runtime_limit_seconds is None or known.runtime_limit_seconds is None:
            continue
        assert known.runtime_limit_seconds >= declared.duration * 1.7
        assert declared.runtime_limit_seconds >= known.runtime_limit_seconds - 1
        limit = declared.runtime_limit_seconds
        assert limit in ROUND_SECONDS or limit % 86400 == 0
    assert round_up(901) == 1800 and round_up(200_000) == 3 * 86400


def test_a_job_that_reaches_its_limit_is_stopped_there_and_its_work_is_lost() -> None:
    cluster = make_cluster({"r0": ["n0"]})
    slow = replace(job("slow", 0.0, 1000.0, pods=1), runtime_limit_seconds=600)
    config = SimConfig(horizon=1e5, slowdown=SlowdownModel.off())
    result = simulate(cluster, [slow], make_policy("phalanx", cluster), config)
    (run,) = result.runs
    assert run.cut and run.finish == 600.0
    assert run.lost_by_cause == {"Limit": 8 * 600}  # GPU-seconds: 8 GPUs for 600 s
    assert run.lost_gpu_seconds == 8 * 600
    within = replace(slow, runtime_limit_seconds=1000)
    (run,) = simulate(cluster, [within], make_policy("phalanx", cluster), config).runs
    assert not run.cut and run.finish == 1000.0 and run.lost_gpu_seconds == 0
