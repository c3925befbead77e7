"""The 12,500-node table's "largest object Phalanx writes" and "cycle p95" (written.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.e2e.written import LIMIT_BYTES, cycle_seconds, written_objects


def test_the_largest_object_of_each_kind_is_named_and_held_to_the_limit() -> None:
    big = {"metadata": {"name": "cluster"}, "status": {"domains": ["x" * (LIMIT_BYTES + 1)]}}
    lists: dict[str, Any] = {
        "networktopologies": {"items": [big]},
        "podgroups": {"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "bb"},
                                                              "status": {"plan": "n1"}}]},
        "queues": {"items": []},
    }
    found = written_objects(lambda path: lists[path.rsplit("/", 1)[-1]], "bench")
    assert found["by_kind"]["PodGroup"]["objects"] == 2
    assert found["by_kind"]["PodGroup"]["largest"] == "bb"
    assert found["by_kind"]["Queue"] == {"objects": 0}
    assert found["largest_kind"] == "NetworkTopology"
    assert found["largest_bytes"] == len(json.dumps(big, separators=(",", ":")))
    assert not found["within_limit"]


def test_cycle_times_come_from_the_operators_cycle_lines(tmp_path: Path) -> None:
    log = tmp_path / "operator.log"
    lines = [json.dumps({"event": "cycle", "cycle": n, "seconds": n / 10,
                         "timestamp": "2026-12-05T10:00:00Z"}) for n in range(1, 21)]
    log.write_text("\n".join(["not json", *lines]) + "\n")
    assert cycle_seconds(log) == {"cycles": 20, "p50": 1.1, "p95": 1.9, "max": 2.0}
    assert cycle_seconds(tmp_path / "missing.log") == {}
