import json
from pathlib import Path

from phalanx.cli.main import main


def test_phalanx_sim_writes_one_result_per_policy(tmp_path: Path) -> None:
    trace = tmp_path / "trace.yaml"
    trace.write_text(
        "jobs:\n"
        "  - {name: a, arrival: 0, duration: 100, pods: 2, gpusPerPod: 8}\n"
        "  - {name: b, arrival: 5, duration: 50, pods: 1, gpusPerPod: 4}\n"
    )
    out = tmp_path / "out"
    code = main(
        [
            "sim",
            "--cluster",
            "examples/clusters/small.yaml",
            "--trace",
            str(trace),
            "--policy",
            "all",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    for policy in ("phalanx", "kube-default", "gang-spread", "gang-binpack"):
        result = json.loads((out / f"{policy}.json").read_text())
        assert result["finished"] == 2 and result["never_started"] == 0


def test_unknown_policy_is_a_usage_error(tmp_path: Path) -> None:
    code = main(
        [
            "sim",
            "--cluster",
            "examples/clusters/small.yaml",
            "--trace",
            "x.yaml",
            "--policy",
            "fifo",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 2
