"""The DRA path decides as the extended resource does: the same jobs, with their GPUs as
DRA devices and claims (`phalanx-dra`), start at the same moments on the same nodes, with
and without preemption."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from phalanx.core.model.inputs import PodInfo
from phalanx.sim.dra import as_dra
from phalanx.sim.dra_compare import compare
from phalanx.sim.run import open_cluster

WORKLOADS = Path(__file__).resolve().parents[2] / "bench" / "workloads"


@pytest.mark.parametrize("workload", ["small-synthetic", "priorities"])
def test_dra_path_starts_every_job_where_and_when_the_extended_resource_does(
    workload: str,
) -> None:
    spec = yaml.safe_load((WORKLOADS / f"{workload}.yaml").read_text())
    trace = {**spec["trace"], "jobs": 60}
    compared = compare(open_cluster(spec["cluster"]), trace, seed=2, load=1.1)
    assert compared.runs >= 60
    assert compared.same == compared.runs, compared.first_difference


def test_fractional_pods_are_refused_by_name() -> None:
    pod = PodInfo("ns", "half", {"cpu": 1000}, gpu_milli=500)
    with pytest.raises(ValueError, match="ns/half asks for part of one"):
        as_dra((), (pod,))
