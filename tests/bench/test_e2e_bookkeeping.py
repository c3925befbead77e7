"""The end-to-end benchmark's bookkeeping: workload drawing, counters, figures."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from bench.e2e.measure import count_delta, parse_request_counts, read_process
from bench.e2e.report import gang_latencies, percentile, throughput
from bench.e2e.workload import (
    GROUP_LABEL,
    draw_gangs,
    load_workload,
    pod_object,
    submission_waves,
)

WORKLOAD = Path(__file__).resolve().parents[2] / "bench" / "workloads" / "e2e.yaml"


def test_gangs_are_seeded_and_fit_the_gpu_budget() -> None:
    workload = load_workload(WORKLOAD)
    gangs = draw_gangs(workload, cluster_gpus=8000)
    assert gangs == draw_gangs(workload, cluster_gpus=8000)
    assert len(gangs) == workload.gangs
    assert sum(g.gpus for g in gangs) <= 0.9 * 8000
    assert {g.pods for g in gangs} <= set(workload.gang_pods)
    assert {g.gpus_per_pod for g in gangs} <= {1, 2, 4, 8}


def test_a_tight_cluster_gets_fewer_gpus_per_pod_not_fewer_pods() -> None:
    workload = dataclasses.replace(load_workload(WORKLOAD), gangs=40)
    roomy = draw_gangs(workload, cluster_gpus=100_000)
    tight = draw_gangs(workload, cluster_gpus=800)
    assert [g.pods for g in tight] == [g.pods for g in roomy]
    assert sum(g.gpus for g in tight) <= 720 < sum(g.gpus for g in roomy)


def test_waves_go_from_large_to_small_pods_and_keep_every_gang() -> None:
    gangs = draw_gangs(load_workload(WORKLOAD), cluster_gpus=8000)
    waves = submission_waves(gangs)
    sizes = [wave[0].gpus_per_pod for wave in waves]
    assert sizes == sorted(sizes, reverse=True)
    assert all(len({g.gpus_per_pod for g in wave}) == 1 for wave in waves)
    assert sorted(g.name for wave in waves for g in wave) == sorted(g.name for g in gangs)


def test_only_phalanx_pods_name_a_group() -> None:
    workload = load_workload(WORKLOAD)
    gang = draw_gangs(workload, cluster_gpus=8000)[0]
    ours = pod_object(workload, gang, "p", "phalanx")
    theirs = pod_object(workload, gang, "p", "default-scheduler")
    assert ours["metadata"]["labels"][GROUP_LABEL] == gang.name
    assert GROUP_LABEL not in theirs["metadata"]["labels"]
    assert theirs["spec"]["schedulerName"] == "default-scheduler"
    assert ours["spec"]["containers"] == theirs["spec"]["containers"]


METRICS = """# TYPE apiserver_request_total counter
apiserver_request_total{code="201",resource="pods",subresource="binding",verb="POST"} %d
apiserver_request_total{code="201",resource="pods",subresource="",verb="POST"} 7
# TYPE apiserver_flowcontrol_dispatched_requests_total counter
apiserver_flowcontrol_dispatched_requests_total{flow_schema="bench-x",priority_level="bench"} %d
"""


def test_request_deltas_by_call_and_by_flow_schema() -> None:
    before = parse_request_counts(METRICS % (10, 3))
    after = parse_request_counts(METRICS % (15, 9))
    delta = count_delta(before, after)
    assert delta["by_call"] == {"POST pods/binding": 5}
    assert delta["by_flow"] == {"bench-x": 6}
    assert delta["total"] == 5


def test_gang_latency_counts_only_fully_bound_gangs() -> None:
    gangs = {"a": ["a-0", "a-1"], "b": ["b-0", "b-1"]}
    bound = {"a-0": 11.0, "a-1": 13.5, "b-0": 12.0}
    assert gang_latencies(gangs, bound, {"a": 10.0, "b": 10.0}) == {"a": 3.5}


def test_percentile_interpolates_and_throughput_counts_from_submission() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([5.0], 99) == 5.0
    assert percentile([], 50) is None
    figures = throughput({"a": 12.0, "b": 14.0}, started=10.0)
    assert figures["pods_per_second"] == 0.5
    assert figures["pods_per_second_binding_span"] == 1.0


def test_process_reading_of_this_process() -> None:
    reading = read_process(os.getpid())
    assert reading is not None
    assert reading.cpu_seconds > 0
    assert reading.peak_rss_mib >= reading.rss_mib > 0
    assert read_process(2**22 + 12345) is None


def test_a_pod_seen_only_by_a_relist_takes_its_scheduled_condition_time() -> None:
    from bench.e2e.run import bind_times

    def pod(name: str, stamp: str) -> dict[str, object]:
        condition = {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp}
        return {"metadata": {"name": name}, "status": {"conditions": [condition]}}

    listing = {"items": [pod("a", "2026-01-01T00:00:10Z"), pod("b", "2026-01-01T00:00:10Z")]}
    ten = 1767225610.0  # 2026-01-01T00:00:10Z
    times, late = bind_times({"a": ("watch", ten + 0.2), "b": ("list", ten + 7.0)}, listing)
    assert times == {"a": ten + 0.2, "b": ten + 0.5}
    assert late == {"b": True}


def _run(pods_per_second: float, rss: float) -> dict[str, object]:
    return {"throughput": {"pods_per_second": pods_per_second},
            "gang_latency_s": {"all": {"p50": 10.0, "p99": 20.0}},
            "api_requests": {"component_per_bound_pod": 1.5},
            "component": {"cpu_seconds_window": 30.0, "peak_rss_mib": rss}}


def test_rounds_compare_means_and_keep_every_round_and_the_worst_rss() -> None:
    from bench.e2e.report import compare_rounds

    comparison = compare_rounds([_run(100, 200), _run(120, 260)], [_run(110, 150), _run(90, 150)])
    assert comparison["rounds"] == 2
    assert comparison["phalanx"]["pods_per_second"] == 110
    assert comparison["ratio_phalanx_over_kube"]["pods_per_second"] == 1.1
    assert comparison["ratio_by_round"]["pods_per_second"] == [0.909, 1.333]
    assert comparison["phalanx_max"]["peak_rss_mib"] == 260
    assert comparison["kube_scheduler_min"]["pods_per_second"] == 90
    assert any("RSS" in loss for loss in comparison["phalanx_loses"])
    assert not any("pods bound per second" in loss for loss in comparison["phalanx_loses"])
