"""bench.e2e.operator_log: per gang, the waits after the cycle that decided it."""

from __future__ import annotations

import json

from bench.e2e.operator_log import read_log, summary


def line(event: str, second: float, **fields: object) -> str:
    stamp = f"2026-12-01T18:00:{second:06.3f}Z"
    return json.dumps({"event": event, "timestamp": stamp, **fields})


def test_a_gangs_waits_are_counted_from_the_end_of_its_cycle() -> None:
    lines = [
        line("cycle", 10.0, cycle=1, seconds=1.5, snapshot_seconds=1.0, writes_in_flight=40),
        "not json",
        line("gang placed", 14.0, cycle=1, burst_seconds=1.0, group="bench/g0"),
        line("gang placed", 12.0, cycle=1, burst_seconds=0.5, group="bench/g1"),
        line("gang placed", 13.0, cycle=7, burst_seconds=0.5, group="bench/g2"),  # unknown cycle
    ]
    cycles, gangs = read_log(lines)
    assert cycles[1].seconds == 1.5 and len(gangs) == 3
    text = "\n".join(summary(cycles, gangs))
    assert "1 cycles with writes; 2 gangs placed" in text
    # g1: burst started 1.5 s after the cycle ended, last reply 2 s after; g0: 3 and 4 s
    assert "cycle end -> burst start   p50   1.50  p90   3.00" in text
    assert "cycle end -> last reply    p50   2.00  p90   4.00" in text
