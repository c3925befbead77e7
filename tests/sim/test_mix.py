"""Priorities and queues laid over a generated trace."""

from __future__ import annotations

from collections import Counter

from phalanx.sim.model import SimQueue
from phalanx.sim.trace import jobs_from_spec
from phalanx.sim.workloads.mix import queues_from_spec

from .conftest import make_cluster

CLUSTER = make_cluster({"r0": ["n0", "n1", "n2", "n3"]})
SPEC = {
    "generator": "synthetic",
    "jobs": 200,
    "maxJobShare": 0.5,
    "priorities": {"highShare": 0.2, "high": 1000, "low": 5, "burst": 4},
    "queues": [
        {"name": "a", "share": 3, "guarantee": 16},
        {"name": "b", "share": 1, "guarantee": 16, "reclaimable": False},
    ],
}


def test_a_share_of_the_jobs_is_high_priority_and_arrives_in_bursts() -> None:
    jobs = jobs_from_spec(SPEC, CLUSTER, seed=3)
    high = [j for j in jobs if j.priority == 1000]
    assert len(high) == 40 and all(j.priority == 5 for j in jobs if j not in high)
    assert sorted(Counter(j.arrival for j in high).values()) == [4] * 10
    base = jobs_from_spec({k: v for k, v in SPEC.items() if k != "priorities"}, CLUSTER, seed=3)
    assert sorted(j.name for j in jobs) == sorted(j.name for j in base)
    assert sum(j.gpus for j in jobs) == sum(j.gpus for j in base)


def test_jobs_go_to_the_queues_by_share_and_the_queues_say_what_they_guarantee() -> None:
    counts = Counter(j.queue for j in jobs_from_spec(SPEC, CLUSTER, seed=3))
    assert set(counts) == {"a", "b"} and counts["a"] > 2 * counts["b"]
    assert queues_from_spec(SPEC) == (
        SimQueue("a", guarantee_gpus=16),
        SimQueue("b", guarantee_gpus=16, reclaimable=False),
    )


def test_a_trace_without_a_mix_is_unchanged() -> None:
    plain = {"generator": "synthetic", "jobs": 20, "maxJobShare": 0.5}
    jobs = jobs_from_spec(plain, CLUSTER, seed=1)
    assert {j.priority for j in jobs} == {0} and {j.queue for j in jobs} == {"default"}
    assert queues_from_spec(plain) == ()
