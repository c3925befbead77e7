"""`kubectl phalanx queues` shows each queue's decayed usage (fair sharing over time) in
GPU-hours, as the operator last wrote it to status.usage."""

from __future__ import annotations

from phalanx.core.parse import snapshot_from_objects
from phalanx.kubectl.queues import format_queues, queue_rows

from .objects import queue


def test_queue_table_shows_decayed_usage_in_gpu_hours() -> None:
    used = queue("team-a")
    used["status"] = {"usage": {"nvidia.com/gpu": 36_000.0, "cpu": 1.0},
                      "usageUpdatedAt": "2026-12-05T18:00:00Z"}
    text = format_queues(queue_rows(snapshot_from_objects([used, queue("team-b")])))
    header, *rows = text.splitlines()
    lines = {line.split()[0]: line.split() for line in rows}
    assert "USAGE GPU-H" in header
    assert lines["team-a"][-3] == "10.0"  # 36,000 GPU-seconds; then RUNNING, WAITING
    assert lines["team-b"][-3] == "-"
