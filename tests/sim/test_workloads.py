from pathlib import Path

import pytest

from phalanx.sim.workloads import alibaba
from phalanx.sim.workloads.synthetic import SyntheticWorkload, arrival_rate, generate

from .conftest import make_cluster


def _cluster():  # type: ignore[no-untyped-def]
    return make_cluster({f"r{r}": [f"n{r}{i}" for i in range(8)] for r in range(4)})


def test_same_seed_same_jobs_other_seed_other_jobs() -> None:
    cluster = _cluster()
    workload = SyntheticWorkload(jobs=50)
    assert generate(workload, cluster, 7) == generate(workload, cluster, 7)
    assert generate(workload, cluster, 7) != generate(workload, cluster, 8)


def test_multi_node_jobs_are_whole_node_pods_and_fit_the_cluster() -> None:
    cluster = _cluster()
    jobs = generate(SyntheticWorkload(jobs=400), cluster, 1)
    big = [j for j in jobs if j.gpus > 8]
    assert big and all(j.gpus_per_pod == 8 and j.pods > 1 for j in big)
    assert max(j.gpus for j in jobs) <= cluster.total_gpus // 2
    assert all(j.pods == 1 for j in jobs if j.gpus <= 8)


def test_arrival_rate_scales_with_offered_load() -> None:
    cluster = _cluster()
    low = arrival_rate(SyntheticWorkload(load=0.7), cluster)
    high = arrival_rate(SyntheticWorkload(load=1.1), cluster)
    assert high / low == pytest.approx(1.1 / 0.7)


def test_fractional_gpu_requests_are_fractional_pods_and_demand_counts_milli(
    tmp_path: Path,
) -> None:
    csv = tmp_path / "pods.csv"
    csv.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
        "a,1000,1024,1,460\nb,1000,1024,2,1000\nc,1000,1024,0,0\n"
    )
    pods = {p.name: p for p in alibaba.read_pods(csv)}
    assert pods["a"].gpus == 1 and pods["a"].fractional
    assert pods["b"].gpus == 2 and not pods["b"].fractional
    jobs = alibaba.demand_jobs(list(pods.values()), cluster_gpus=10, seed=1, demand=1.3)
    by_pod = {j.name.rsplit("-", 1)[0]: j for j in jobs}
    assert (by_pod["a"].gpus_per_pod, by_pod["a"].gpu_milli_per_pod) == (0, 460)
    assert (by_pod["b"].gpus_per_pod, by_pod["b"].milli_per_pod) == (2, 2000)
    requested = sum(j.gpu_milli for j in jobs)
    assert 13_000 - 2000 < requested <= 13_000  # the next pod would pass 130%
    assert [p.name for p in alibaba.read_pods(csv, whole_only=True)] == ["b", "c"]


def test_missing_trace_names_the_data_directory(tmp_path: Path) -> None:
    with pytest.raises(alibaba.TraceMissing, match="bench/data"):
        alibaba.read_pods(tmp_path / "absent.csv")
