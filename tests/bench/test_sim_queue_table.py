"""bench.sim's per-queue figures: aggregated per queue over seeds, shown for the chosen
policies in their order."""

from __future__ import annotations

from typing import Any

from bench.sim.run import aggregate, queue_table


def _run(policy: str, seed: int, lost: dict[str, float]) -> dict[str, Any]:
    """A run summary carrying only what the aggregation reads (None where unmeasured)."""
    none: dict[str, Any] = {"mean": None, "p50": None, "p95": None}
    cells: dict[str, Any] = {
        "load": 1.1,
        "slowdown_model": "on",
        "policy": policy,
        "seed": seed,
        "queueing_delay_seconds": none,
        "jct_seconds": none,
        "high_priority_wait_seconds": none,
        "scheduler_seconds_per_cycle": {"mean": None, "p95": None},
        "snapshot_seconds_per_cycle": {"mean": None},
        "all_finished": True,
    }
    per_queue = {
        queue: {
            "high_priority_wait_seconds": {"p50": 0.0, "p95": 3600.0 * seed},
            "queueing_delay_seconds": {"p95": 7200.0},
            "evicted_gpus": 8.0,
            "job_evictions": 1,
            "gpu_hours_lost": hours,
        }
        for queue, hours in lost.items()
    }
    return {**{k: None for k in _FLAT}, **cells, "per_queue": per_queue}


_FLAT = (
    "gpu_allocation",
    "gpu_busy",
    "final_gpu_allocation",
    "window_gpu_allocation",
    "window_gpu_busy",
    "window_fully_free_nodes",
    "held_idle_gpu_hours",
    "makespan_seconds",
    "never_started",
    "never_started_holding_gpus",
    "multi_node_in_one_rack",
    "multi_node_in_one_block",
    "mean_slowdown_multi_node",
    "fully_free_nodes_mean",
    "evicted_gpus",
    "job_evictions",
    "gpu_hours_lost",
    "biggest_gang_max_wait_seconds",
    "cycles",
    "run_wall_seconds",
)


def test_each_queue_is_aggregated_over_seeds_and_shown_for_the_chosen_policies() -> None:
    runs = [
        _run(policy, seed, {"team-a": 2.0 * seed, "team-b": 1.0})
        for policy in ("phalanx", "kube-default", "kueue-like", "gang-spread")
        for seed in (1, 2)
    ]
    rows = aggregate(runs)
    phalanx = next(r for r in rows if r["policy"] == "phalanx")
    assert phalanx["per_queue"]["team-a"]["gpu_hours_lost"]["mean"] == 3.0
    lines = queue_table(rows, ("phalanx", "kueue-like", "kube-default"))
    body = [line for line in lines if line.startswith("| 1.1")]
    assert [line.split(" | ")[2:4] for line in body] == [
        [queue, policy]
        for queue in ("team-a", "team-b")
        for policy in ("phalanx", "kueue-like", "kube-default")
    ]
    assert "| 1.50 ± 0.71 |" in body[0]  # high-priority wait p95: 1 h and 2 h
