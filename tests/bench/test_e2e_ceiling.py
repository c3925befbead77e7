"""The ceiling contender: its plan (first-fit by requests) and its place in the tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench.e2e.ceiling_plan import Binding, first_fit
from bench.e2e.report import compare_rounds, headline
from bench.e2e.run import CEILING_SCHEDULER_NAME, _objects_for
from bench.e2e.table import TARGET_KEYS, readme_section, targets_of
from bench.e2e.workload import Gang, load_workload, submission_waves
from tests.bench.test_e2e_modes import _results, _run

from phalanx.cluster.description import NodeShape

WORKLOAD = Path(__file__).resolve().parents[2] / "bench" / "workloads" / "e2e.yaml"


def _pods(gangs: list[Gang]) -> list[dict[str, Any]]:
    objects = _objects_for("ceiling", load_workload(WORKLOAD), rack_gpus=200)
    return [body for wave in submission_waves(gangs) for g in wave for body in objects(g)]


def test_ceiling_pods_have_no_group_and_a_scheduler_nobody_runs() -> None:
    (pod, *_) = _pods([Gang("g1", 2, 4)])
    assert pod["kind"] == "Pod"
    assert pod["spec"]["schedulerName"] == CEILING_SCHEDULER_NAME
    assert "scheduling.phalanx.io/pod-group" not in pod["metadata"]["labels"]


def test_first_fit_fills_each_node_in_order_with_its_next_gpus() -> None:
    # largest GPUs per pod first (the creation order): 8-GPU pods, then 4s, then 1s
    pods = _pods([Gang("a", 2, 1), Gang("b", 3, 4), Gang("c", 1, 8)])
    plan = first_fit(pods, ["n0", "n1", "n2", "n3"], NodeShape(gpus=8))
    assert [(b.name, b.node, b.devices) for b in plan] == [
        ("c-00", "n0", "0,1,2,3,4,5,6,7"),
        ("b-00", "n1", "0,1,2,3"), ("b-01", "n1", "4,5,6,7"), ("b-02", "n2", "0,1,2,3"),
        ("a-00", "n2", "4"), ("a-01", "n2", "5"),
    ]
    assert plan[0] == Binding.from_json(plan[0].to_json())


def test_first_fit_counts_cpu_memory_and_pod_slots_too() -> None:
    # e2e.yaml asks 16 cpu per GPU: a 96-cpu node holds six 1-GPU pods, not eight
    pods = _pods([Gang("a", 8, 1)])
    plan = first_fit(pods, ["n0", "n1"], NodeShape(gpus=8, cpu="96"))
    assert [b.node for b in plan] == ["n0"] * 6 + ["n1"] * 2
    slots = first_fit(pods, ["n0", "n1"], NodeShape(gpus=8, pods=5))
    assert [b.node for b in slots] == ["n0"] * 5 + ["n1"] * 3


def test_a_pod_no_node_has_room_for_is_named() -> None:
    with pytest.raises(ValueError, match="no node has room for pod a-02"):
        first_fit(_pods([Gang("a", 3, 8)]), ["n0", "n1"], NodeShape(gpus=8))


def test_backlog_table_shows_phalanx_as_a_share_of_the_ceiling() -> None:
    runs = {"phalanx": _run(300, 0), "kube-scheduler": _run(100, 5), "ceiling": _run(400, 0)}
    comparisons = {other: compare_rounds([runs["phalanx"]], [runs[other]], other)
                   for other in ("kube-scheduler", "ceiling")}
    mode = {"runs": runs, "rounds": [{k: headline(v) for k, v in runs.items()}],
            "comparisons": comparisons}
    results = _results(mode)
    del results["modes"]["arrival"]
    text = readme_section(results, "e2e-backlog-1000")
    assert "| Phalanx / kube-scheduler | Phalanx / ceiling (bindings only) |" in text
    assert "| pods bound per second (from the start to the last binding) | 300 | 100 | 400 " \
           "| 3.00 | 0.75 |" in text
    assert "- backlog pods/s, Phalanx / ceiling (bindings only) >= 0.8: **0.75** (missed)" \
        in text
    assert "Phalanx / kube-scheduler >= 1.5: **3.00** (met)" in text
    # the ceiling is no rival: Phalanx's lower rate against it is the share, not a loss
    assert "ceiling" not in text.split("Where Phalanx loses (generated):")[1]


def test_a_workload_file_sets_the_goals_its_table_states() -> None:
    """e2e-12500 states #36's goals at that size (2x kube-scheduler, RSS under 2 GiB, the
    rack share reported without a goal); a workload without `targets` keeps the defaults."""
    large = targets_of({"parameters": {"name": "e2e-12500"}})
    assert large == {"kubeSchedulerRatio": 2.0, "peakRssMiB": 2048.0, "inOneRackPct": None}
    assert targets_of({"parameters": {"name": "e2e-5000"}}) == TARGET_KEYS
