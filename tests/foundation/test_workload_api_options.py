"""The Workload API option asks each Kubernetes release for its own gates and versions: a
component refuses a gate it does not know, so 1.36's list would stop a 1.37 cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.cluster import components
from phalanx.cluster.components import Options, UnsupportedVersion, minor_of


def gates(options: Options) -> set[str]:
    (flag,) = options.feature_gate_args()
    return {pair.split("=")[0] for pair in flag.removeprefix("--feature-gates=").split(",")}


def test_each_release_gets_the_gates_it_knows() -> None:
    on_137, on_136 = gates(Options(True, minor=37)), gates(Options(True, minor=36))
    assert {"GenericWorkload", "PodGroupPreemptionPolicy", "CompositePodGroup"} <= on_137
    assert not {"GangScheduling", "WorkloadAwarePreemption"} & on_137  # gone in 1.37
    assert {"GangScheduling", "WorkloadAwarePreemption"} <= on_136
    assert "PodGroupPreemptionPolicy" not in on_136


def test_the_served_versions_follow_the_release() -> None:
    assert Options(True, minor=37).runtime_config_args() == [
        "--runtime-config=scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true"]
    assert Options(True, minor=36).runtime_config_args() == [
        "--runtime-config=scheduling.k8s.io/v1alpha2=true"]
    assert Options(False, minor=37).runtime_config_args() == []
    assert Options(False, minor=37).feature_gate_args() == []


def test_the_apiserver_gets_both_flags_only_with_the_option() -> None:
    credentials = components.pki.Credentials(*(Path(f"/x/{i}") for i in range(6)), "token")
    on = components.apiserver_args(Path("api"), Path("/run"), credentials, 1, 2,
                                   Options(True, minor=37))
    off = components.apiserver_args(Path("api"), Path("/run"), credentials, 1, 2, Options())
    assert any(a.startswith("--runtime-config=") for a in on)
    assert not any(a.startswith(("--runtime-config=", "--feature-gates=")) for a in off)


def test_a_release_without_known_gates_is_refused_by_name() -> None:
    with pytest.raises(UnsupportedVersion, match=r"1\.36, 1\.37; these binaries are 1\.35"):
        Options(True, minor=35).feature_gate_args()
    assert minor_of("v1.37.2") == 37
    with pytest.raises(UnsupportedVersion):
        minor_of("2.0")
