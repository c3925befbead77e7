"""bench.e2e.topology_status_size: which rows each status has (its byte counts are the figure)."""

from __future__ import annotations

from bench.e2e.topology_status_size import CLUSTER, measure


def test_the_written_status_leaves_out_one_row_per_host() -> None:
    lines = measure(CLUSTER, nodes=50)  # 1 block of 2 racks of 25 nodes
    assert lines[0] == "bench-5000.yaml: 50 nodes"
    rows = [int(line.split()[-8]) for line in lines[1:]]  # "<n> rows <x> KB sent ..."
    assert rows == [3, 53]
