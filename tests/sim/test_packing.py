"""The packing harness (the FGD paper's benchmark): tiny clusters with known answers."""

from __future__ import annotations

import pytest

from phalanx.sim.packing import PackCluster, PackNode, PackPod, arrivals, run_packing
from phalanx.sim.packing.nodes import CapacityError
from phalanx.sim.packing.policies import POLICIES, BestFit, Fgd, PhalanxCore
from phalanx.sim.packing.policy import pick_best
from phalanx.sim.packing.typical import Shape, typical_shapes

ALL = sorted(POLICIES)


def pod(name: str, gpus: int = 1, milli: int = 1000, cpu: int = 1000, mem: int = 1024,
        models: tuple[str, ...] = ()) -> PackPod:
    return PackPod(name, cpu, mem, gpus, milli if gpus else 0, models)


def node(name: str, gpus: int = 8, cpu: int = 96_000, mem: int = 512 * 1024,
         model: str = "V100") -> PackNode:
    return PackNode(name, cpu, mem, gpus, model)


def make(policy: str, trace: list[PackPod]):  # type: ignore[no-untyped-def]
    return POLICIES[policy](trace)


def test_arrivals_keep_every_trace_pod_and_add_draws_up_to_the_demand() -> None:
    trace = [pod("a"), pod("b", 0), pod("c", milli=500)]
    sequence = arrivals(trace, cluster_gpu_milli=10_000, seed=3)
    names = [p.name for p in sequence]
    assert {"a", "b", "c"} <= set(names)
    total = sum(p.total_gpu_milli for p in sequence)
    assert 13_000 - 1000 < total <= 13_000
    assert sequence == arrivals(trace, 10_000, seed=3)
    assert sequence != arrivals(trace, 10_000, seed=4)


def test_arrivals_drop_pods_when_the_trace_alone_passes_the_demand() -> None:
    trace = [pod(f"p{i}") for i in range(20)]
    sequence = arrivals(trace, cluster_gpu_milli=10_000, seed=1)
    assert sum(p.total_gpu_milli for p in sequence) == 13_000
    assert len(set(p.name for p in sequence)) == 13


@pytest.mark.parametrize("policy", ALL)
def test_fractional_pods_share_one_device_and_block_whole_gpu_pods(policy: str) -> None:
    trace = [pod("f1", milli=600), pod("f2", milli=400), pod("f3", milli=100), pod("w")]
    result = run_packing(make(policy, trace), [node("n", gpus=1)], trace, seed=1)
    assert result.placed == 2
    assert result.allocated_gpu_milli == 1000
    assert result.failed_by_kind == {"1-gpu": 1, "fractional": 1}


@pytest.mark.parametrize("policy", ALL)
def test_gpu_spec_is_honoured(policy: str) -> None:
    nodes = [node("a-v100", gpus=1, model="V100"), node("b-t4", gpus=1, model="T4")]
    trace = [pod("t4-1", models=("T4",)), pod("t4-2", models=("T4", "A10")), pod("any")]
    result = run_packing(make(policy, trace), nodes, trace, seed=1)
    assert result.placed == 2
    assert result.failed_by_kind == {"1-gpu": 1}
    cluster = PackCluster(nodes)
    assert list(cluster.feasible(trace[0])) == [False, True]


@pytest.mark.parametrize("policy", ALL)
def test_cpu_and_memory_are_honoured(policy: str) -> None:
    nodes = [node("n", gpus=2, cpu=8000, mem=4096)]
    trace = [pod("big-cpu", cpu=9000), pod("big-mem", mem=5000), pod("fits", cpu=8000, mem=4096),
             pod("no-cpu-left", cpu=1)]
    result = run_packing(make(policy, trace), nodes, trace, seed=1)
    assert result.placed == 1
    assert result.allocated_gpu_milli == 1000


def test_best_fit_takes_the_fullest_node_and_the_fullest_device() -> None:
    cluster = PackCluster([node("empty"), node("busy")])
    for d in range(6):
        cluster.place(1, pod(f"w{d}"), (d,))
    cluster.place(1, pod("half", milli=500), (6,))
    assert BestFit().choose(cluster, pod("one")) == (1, (7,))
    assert BestFit().choose(cluster, pod("small", milli=300)) == (1, (6,))


def test_ties_go_to_the_runs_node_order() -> None:
    cluster = PackCluster([node("a"), node("b"), node("c")], tie_order=[2, 0, 1])
    import numpy as np

    nodes = np.array([0, 1, 2])
    assert pick_best(cluster, nodes, np.array([5, 5, 5])) == 1
    assert pick_best(cluster, nodes, np.array([5, 5, 6])) == 2


def test_typical_shapes_cover_95_percent_most_frequent_first() -> None:
    trace = [pod(f"a{i}", milli=500) for i in range(60)] + [pod(f"b{i}") for i in range(36)]
    trace += [pod(f"c{i}", cpu=3000) for i in range(4)]
    shapes = typical_shapes(trace)
    assert [s for s, _ in shapes] == [Shape(1000, 500, 1), Shape(1000, 1000, 1)]
    assert [round(f, 4) for _, f in shapes] == [round(60 / 96, 4), round(36 / 96, 4)]


def test_fgd_puts_a_fraction_where_it_fragments_least() -> None:
    trace = [pod("whole")] * 9 + [pod("half", milli=500)]
    fgd = Fgd.from_trace(trace)
    cluster = PackCluster([node("a", gpus=2), node("b", gpus=2)])
    cluster.place(0, pod("x", milli=500), (1,))
    # Onto a's half-free device: both devices of b and a's other one stay whole for the
    # typical whole-GPU pods (any other choice leaves a half device they cannot use).
    assert fgd.choose(cluster, pod("next", milli=500)) == (0, (1,))


def test_phalanx_policy_places_through_the_core() -> None:
    cluster = PackCluster([node("a", gpus=2), node("b", gpus=2)])
    policy = PhalanxCore()
    first = policy.choose(cluster, pod("f", milli=300))
    assert first is not None
    cluster.place(first[0], pod("f", milli=300), first[1])
    second = policy.choose(cluster, pod("g", milli=300))
    assert second == first  # the device already in use takes the next fraction
    cluster.place(second[0], pod("g", milli=300), second[1])
    whole = policy.choose(cluster, pod("w", gpus=2))
    assert whole is not None and whole[0] != first[0] and len(whole[1]) == 2


def test_a_placement_that_does_not_fit_is_refused() -> None:
    cluster = PackCluster([node("n", gpus=1)])
    cluster.place(0, pod("a", milli=700), (0,))
    with pytest.raises(CapacityError):
        cluster.place(0, pod("b", milli=400), (0,))
    with pytest.raises(CapacityError):
        cluster.place(0, pod("c", milli=200), (1,))


def test_result_reports_the_paper_figure_and_free_8_gpu_nodes() -> None:
    nodes = [node("a"), node("b"), node("c", gpus=4)]
    trace = [pod("eight", gpus=8)]
    result = run_packing(BestFit(), nodes, trace, seed=1)
    assert result.fully_free_8gpu_nodes == 1
    assert result.allocation == pytest.approx(100 * 8 / 20)
    assert result.allocation_at_demand(40) == pytest.approx(40.0)
    assert result.allocation_at_demand(130) == pytest.approx(40.0)  # falls back to the end


def test_same_seed_same_result() -> None:
    nodes = [node(f"n{i}", gpus=g) for i, g in enumerate([1, 2, 4, 8, 8])]
    trace = [pod("a", milli=250), pod("b", 2), pod("c", 0), pod("d", 4, cpu=40_000), pod("e")]
    sequence = arrivals(trace, 23_000, seed=5)
    for policy in ALL:
        one = run_packing(make(policy, trace), nodes, sequence, seed=5)
        two = run_packing(make(policy, trace), nodes, sequence, seed=5)
        assert (one.allocation_at, one.fully_free_8gpu_nodes) == (
            two.allocation_at, two.fully_free_8gpu_nodes)


def test_report_judges_phalanx_against_fgd_plus_the_margin_seed_by_seed() -> None:
    from bench.packing.report import checks
    from bench.packing.run import aggregate

    def run(policy: str, seed: int, value: float) -> dict[str, object]:
        return {"trace": "default", "policy": policy, "seed": seed, "allocation_at_130": value,
                "fully_free_8gpu_nodes": 0, "stranded_gpus": 0.0, "ms_per_pod": 1.0}

    runs = [run("fgd", 1, 95.0), run("fgd", 2, 96.0), run("phalanx", 1, 95.5),
            run("phalanx", 2, 96.6)]
    verdicts, losses = checks({"aggregate": aggregate(runs)})
    line = next(v for v in verdicts if "FGD in this harness" in v)
    # the seeds differ by +0.5 and +0.6: above FGD + 0.5 on average
    assert line.endswith("(per seed +0.55 ± 0.07 pt, +0.50 to +0.60): **met**")
    runs[3] = run("phalanx", 2, 96.4)
    verdicts, losses = checks({"aggregate": aggregate(runs)})
    assert any("vs FGD (this harness) 95.50%, +0.45 pt" in loss for loss in losses)


def test_the_table_prints_the_papers_fgd_and_bestfit_beside_each_published_trace() -> None:
    from bench.packing.report import table
    from bench.packing.run import aggregate

    runs = [{"trace": trace, "policy": policy, "seed": 1, "allocation_at_130": 90.0,
             "fully_free_8gpu_nodes": 0, "stranded_gpus": 0.0, "ms_per_pod": 1.0}
            for trace in ("default", "multigpu50", "gpushare100") for policy in ("fgd", "bestfit")]
    rows = [line.split("|") for line in table({"aggregate": aggregate(runs)})[2:]]
    assert len(rows) == 6
    assert all(row[4].strip() for row in rows), "a paper value missing beside " + str(
        [row[1:3] for row in rows if not row[4].strip()])
