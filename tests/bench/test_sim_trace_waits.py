"""bench.sim.trace --waits: each queue's top-priority waits under a policy, counted over the
very jobs of that queue and priority."""

from __future__ import annotations

import re

import pytest
import yaml
from bench.common import ROOT, WORKLOADS
from bench.sim.trace import main

from phalanx.sim.run import open_cluster
from phalanx.sim.trace import jobs_from_spec


def test_every_queue_gets_a_line_per_policy_counting_its_top_priority_jobs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = yaml.safe_load((WORKLOADS / "priority-queues.yaml").read_text())
    load = float(spec["loads"][0])
    cluster = open_cluster(str(ROOT / spec["cluster"]))
    jobs = jobs_from_spec(spec["trace"], cluster, seed=3, load=load)
    top = max(j.priority for j in jobs)
    counts = {q: sum(1 for j in jobs if j.queue == q and j.priority == top)
              for q in ("team-a", "team-b")}  # fmt: skip
    assert main(["--workload", "priority-queues", "--seed", "3", "--waits", "kube-default",
                 "kueue-like"]) == 0  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "kube-default, team-a", "kube-default, team-b", "kueue-like, team-a", "kueue-like, team-b"
    ]
    for line in lines:
        queue = line.split(":")[0].split(", ")[1]
        found = re.search(r": (\d+) priority-(\d+) jobs, .* p95 ([\d.]+) h, (\d+) over 0.5 h", line)
        assert found is not None, line
        assert (int(found[1]), int(found[2])) == (counts[queue], top)
        assert int(found[4]) <= counts[queue]
        assert "GPU-h waited" in line
