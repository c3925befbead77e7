"""bench.e2e.snapshot: what each snapshot parses (its CPU figures are not checked: timings)."""

from __future__ import annotations

import pytest
from bench.common import ROOT
from bench.e2e.snapshot import main


def test_only_what_changed_is_parsed_and_every_pod_is_shown(
        capsys: pytest.CaptureFixture[str]) -> None:
    main(["--workload", str(ROOT / "bench" / "workloads" / "e2e.yaml")])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "1000 nodes, 5552 pods, 500 PodGroups"
    counts = [line.split(")")[-1].split() for line in lines if "parses" in line]
    assert counts == [["7052", "parses", "5552", "pods"], ["0", "parses", "5552", "pods"],
                      ["555", "parses", "5552", "pods"], ["4997", "parses", "5552", "pods"],
                      ["0", "parses", "5552", "pods"]]
