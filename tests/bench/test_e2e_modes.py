"""The end-to-end benchmark's three contenders and two modes: objects, partial gangs, table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.e2e.report import (
    after_last_creation,
    binding_spreads,
    headline,
    partial_gangs,
    spread_gangs,
)
from bench.e2e.table import markers, readme_section, section_name
from bench.e2e.workload import (
    BLOCK_LABEL,
    RACK_LABEL,
    Gang,
    load_workload,
    pod_object,
    upstream_pod_group_object,
)

WORKLOAD = Path(__file__).resolve().parents[2] / "bench" / "workloads" / "e2e.yaml"


def test_upstream_gang_is_one_rack_unless_no_rack_could_hold_it() -> None:
    workload = load_workload(WORKLOAD)
    small, big = Gang("g1", 4, 8), Gang("g2", 64, 8)
    group = upstream_pod_group_object(workload, small, rack_gpus=200)
    assert group["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    assert group["spec"]["schedulingConstraints"]["topology"] == [{"key": RACK_LABEL}]
    wide = upstream_pod_group_object(workload, big, rack_gpus=200)
    assert wide["spec"]["schedulingConstraints"]["topology"] == [{"key": BLOCK_LABEL}]
    pod = pod_object(workload, small, "g1-00", "default-scheduler", upstream_group=True)
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "g1"}
    plain = pod_object(workload, small, "g1-00", "default-scheduler")
    assert "schedulingGroup" not in plain["spec"]


def test_partial_gangs_are_spread_bindings_or_pods_left_unbound() -> None:
    gangs = {"together": ["a", "b"], "spread": ["c", "d"], "left": ["e", "f"], "none": ["g"],
             "single": ["h"]}
    bound = {"a": 10.0, "b": 11.5, "c": 10.0, "d": 13.0, "e": 10.0, "h": 50.0}
    found = partial_gangs(gangs, bound, seconds=2.0)
    assert found == {"seen": 2, "left_partial": 1, "bindings_spread_over_s": 2.0}


def test_binding_spreads_by_gang_size_count_whole_gangs_only() -> None:
    gangs = {"together": ["a", "b"], "spread": ["c", "d"], "left": ["e", "f"],
             "four": ["i", "j", "k", "l"], "single": ["h"]}
    bound = {"a": 10.0, "b": 11.5, "c": 10.0, "d": 13.0, "e": 10.0, "h": 50.0,
             "i": 1.0, "j": 1.2, "k": 1.4, "l": 1.6}
    assert binding_spreads(gangs, bound, seconds=2.0) == {
        "2": {"gangs": 2, "over": 1, "p50_s": 2.25, "max_s": 3.0},
        "4": {"gangs": 1, "over": 0, "p50_s": 0.6, "max_s": 0.6}}
    assert spread_gangs(gangs, bound, seconds=2.0, started=5.0) == [["spread", 2, 5.0, 3.0]]


def _run(pods_per_second: float, partial: int) -> dict[str, Any]:
    return {"pods": 10, "throughput": {"pods_per_second": pods_per_second, "pods_bound": 10},
            "gang_latency_s": {"all": {"p50": 1.0, "p99": 2.0}},
            "api_requests": {"component_per_bound_pod": 1.5, "all_clients_per_bound_pod": 3.0},
            "component": {"cpu_seconds_window": 3.0, "peak_rss_mib": 100.0},
            "partial_gangs": {"seen": partial, "left_partial": 0},
            "locality": {"multi_node_gangs_in_one_rack_pct": 100.0},
            "processes": {"kube-apiserver": {"cpu": 9.0}}}


def _results(mode: dict[str, Any]) -> dict[str, Any]:
    """A results file whose two modes both hold `mode`."""
    return {"command": "python -m bench.e2e", "finished_at": "now", "duration_s": 60,
            "machine": {"load_average_start": [0.5, 1.0, 2.0],
                        "load_average_end": [4.0, 3.5, 3.0], "cpus": 2,
                        "python": "CPython"},
            "versions": {"kubernetes": "v1.36.1", "kwok": "v0.8.0"},
            "parameters": {"nodes": 5000, "gpus_per_node": 8, "cluster_gpus": 40000,
                           "seed": 1, "gangs": 3, "gangs_by_pods": {"1": 1, "128": 2},
                           "pods": 30, "gpus": 30, "concurrency": 64,
                           "kube_scheduler_qps": 5000, "kube_scheduler_burst": 10000},
            "modes": {"backlog": mode, "arrival": mode}}


def test_table_compares_phalanx_with_each_kube_scheduler_in_each_mode() -> None:
    from bench.e2e.report import compare_rounds

    runs = {"phalanx": _run(300, 0), "kube-scheduler": _run(100, 5),
            "kube-scheduler-gang": _run(200, 0)}
    comparisons = {other: compare_rounds([runs["phalanx"]], [runs[other]], other)
                   for other in ("kube-scheduler", "kube-scheduler-gang")}
    mode = {"runs": runs, "rounds": [{k: headline(v) for k, v in runs.items()}],
            "comparisons": comparisons}
    text = readme_section(_results(mode), section_name(Path("bench/results/e2e-5000.json")))
    begin, end = markers("e2e-5000")
    assert text.startswith(begin) and text.endswith(end)
    assert "| pods bound per second (from the start to the last binding) | 300 | 100 | 200 " \
           "| 3.00 | 1.50 |" in text
    assert "Phalanx / kube-scheduler >= 1.5: **3.00** (met)" in text
    assert "Phalanx / kube-scheduler + gang/topology plugins >= 1.5: **1.50** (met)" in text
    assert "0 partial gangs: **0.00** (met)" in text
    # load averages read back from the JSON (lists) are written as the run wrote them
    assert "load average (0.5, 1.0, 2.0) at start, (4.0, 3.5, 3.0) at the end" in text


def test_the_last_binding_is_timed_from_the_submissions_last_creation() -> None:
    """Near 0 in arrival mode: the run measured the submission's pace, not the scheduler's."""
    arrival = {"throughput": {"last_bound_s": 42.5}, "measured_from_epoch": 1000.0,
               "submission": {"started_epoch": 1000.0, "seconds": 40.0}}
    assert after_last_creation(arrival) == 2.5  # bound at 1,042.5, last created at 1,040
    backlog = {**arrival, "measured_from_epoch": 1100.0}  # timed from the scheduler's start
    assert after_last_creation(backlog) == 102.5  # bound at 1,142.5
    assert after_last_creation({**arrival, "throughput": {"pods_bound": 0}}) is None


def test_only_the_arrival_table_times_the_last_binding_from_the_last_creation() -> None:
    run = {**_run(100, 0), "measured_from_epoch": 1000.0,
           "submission": {"started_epoch": 1000.0, "seconds": 40.0}}
    run["throughput"] = {**run["throughput"], "last_bound_s": 42.5}
    mode = {"runs": {"phalanx": run, "kube-scheduler": run},
            "rounds": [{"phalanx": headline(run), "kube-scheduler": headline(run)}],
            "comparisons": {}}
    text = readme_section(_results(mode), "e2e")
    row = "| last binding after the last creation (s, round 1) | 2.50 | 2.50 |"
    assert text.count(row) == 1
    assert text.index("**arrival**") < text.index(row)


def test_a_run_of_phalanx_alone_still_checks_its_peak_rss() -> None:
    """`--only phalanx` compares with nothing, but the operator's memory target is its own."""
    run = _run(100, 0)
    mode = {"runs": {"phalanx": run}, "rounds": [{"phalanx": headline(run)}], "comparisons": {}}
    text = readme_section(_results(mode), "e2e")
    peak = headline(run)["peak_rss_mib"]
    assert f"- operator peak RSS < 1024 MiB: **{peak:.0f} MiB** (met)" in text
