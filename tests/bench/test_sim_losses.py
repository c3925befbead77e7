"""The generated list of where Phalanx loses says why, when the workload file does."""

from __future__ import annotations

from bench.sim.run import losses


def row(policy: str, evicted: float) -> dict[str, object]:
    return {
        "policy": policy,
        "load": 1.1,
        "slowdown_model": "on",
        "evicted_gpus": {"mean": evicted},
    }


def test_a_loss_carries_the_workload_files_explanation_and_only_its_own() -> None:
    rows = [row("phalanx", 400.0), row("kube-default", 300.0)]
    why = {"evicted_gpus": "reclaims give team-b its half back", "wait_p95_s": "unused"}
    assert losses("w", rows, why) == [
        "- w, load 1.1, slowdown model on: GPUs evicted 400 vs 300 (kube-default): "
        "reclaims give team-b its half back"
    ]
    assert losses("w", rows) == [
        "- w, load 1.1, slowdown model on: GPUs evicted 400 vs 300 (kube-default)"
    ]
