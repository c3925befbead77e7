"""The trace's allowed GPU models (`gpu_spec`): a pod lands only on nodes of those
models, under every policy (node affinity on `nvidia.com/gpu.product`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from phalanx.cluster import labels
from phalanx.sim.cluster import cluster_from_objects
from phalanx.sim.engine import SimConfig, simulate
from phalanx.sim.model import SimCluster
from phalanx.sim.policies import POLICIES, make_policy
from phalanx.sim.workloads import alibaba

from .conftest import job, node_object

V100 = ("V100M16", "V100M32")


def _cluster() -> SimCluster:
    models = {"a0": "T4", "a1": "T4", "b0": "V100M16", "b1": "V100M32", "c0": "P100"}
    objects = []
    for name, model in models.items():
        obj = node_object(name)
        obj["metadata"]["labels"][labels.GPU_PRODUCT] = model  # type: ignore[index]
        objects.append(obj)
    return cluster_from_objects("models", objects)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_pod_with_gpu_models_lands_only_on_nodes_of_those_models(policy: str) -> None:
    cluster = _cluster()
    restricted = [replace(job(f"v{i}", i, 1e6, gpus=4), gpu_models=V100) for i in range(5)]
    jobs = [*restricted, job("free", 10, 1e6, gpus=8)]
    result = simulate(cluster, jobs, make_policy(policy, cluster), SimConfig(horizon=100))
    runs = {r.name: r for r in result.runs}
    model_of = [n.labels[labels.GPU_PRODUCT] for n in cluster.nodes]
    placed = [model_of[n] for i in range(5) for n in runs[f"v{i}"].nodes]
    assert sorted(placed) == ["V100M16", "V100M16", "V100M32", "V100M32"]
    assert runs["v4"].start is None  # the V100s are full; the T4s and the P100 stay free
    assert runs["free"].start is not None


def test_gpu_spec_of_the_trace_becomes_the_allowed_models(tmp_path: Path) -> None:
    csv = tmp_path / "pods.csv"
    csv.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
        "a,1000,1024,1,1000,V100M16|V100M32\nb,1000,1024,1,1000,\n"
    )
    pods = {p.name: p for p in alibaba.read_pods(csv)}
    assert pods["a"].models == V100 and pods["b"].models == ()
