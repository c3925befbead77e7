"""The shell's half of fair sharing over time (operator/queue_usage.py): each queue's
decayed usage advanced every cycle by what it held, written to status at a bounded rate,
and taken up again from status by a new operator. Time is passed in, never waited for."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.core.admission.usage import accrue
from phalanx.core.parse import parse_queue
from phalanx.operator.queue_usage import UsageBook, usage_timestamp

GPU = "nvidia.com/gpu"
HOUR = 3600.0
T0 = 1_800_000_000.0


def queue(name: str = "team-a", status: dict[str, Any] | None = None,
          half_life: float | None = None) -> dict[str, Any]:
    spec = {} if half_life is None else {"fairSharing": {"usageHalfLifeSeconds": half_life}}
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "Queue",
            "metadata": {"name": name}, "spec": spec, "status": status or {}}


def gpu_seconds(fields: dict[str, Any]) -> float:
    return float(fields["usage"].get(GPU, 0.0))


def test_usage_grows_by_what_ran_and_is_written_at_most_every_interval() -> None:
    book = UsageBook(half_life=HOUR, write_seconds=30.0)
    held = {"team-a": {GPU: 16_000}}  # 16 GPUs in milli-units
    first = book.advance([queue()], held, T0)
    assert gpu_seconds(first["team-a"]) == 0.0  # nothing ran before: written at once
    assert book.advance([queue()], held, T0 + 10) == {}  # too soon to write again
    due = book.advance([queue()], held, T0 + 30)["team-a"]
    expected = accrue({}, {GPU: 16.0}, 30.0, HOUR)[GPU]  # 16 GPUs for 30 s, decayed
    assert gpu_seconds(due) == pytest.approx(expected, abs=1e-3)
    assert due["usageUpdatedAt"] == usage_timestamp(T0 + 30)


def test_a_new_operator_continues_from_the_status() -> None:
    """What one book wrote, another (a restarted operator) reads back and continues
    from: the same usage as one book that never stopped, the gap counted as running what
    runs now."""
    held = {"team-a": {GPU: 8_000}}
    one = UsageBook(half_life=HOUR, write_seconds=1.0)
    one.advance([queue()], held, T0)
    written = one.advance([queue()], held, T0 + 600)["team-a"]
    again = UsageBook(half_life=HOUR, write_seconds=1.0)
    resumed = again.advance([queue(status=written)], held, T0 + 900)["team-a"]
    never_stopped = one.advance([queue()], held, T0 + 900)["team-a"]
    assert gpu_seconds(resumed) == pytest.approx(gpu_seconds(never_stopped), rel=1e-6)
    assert gpu_seconds(resumed) > gpu_seconds(written)
    fresh = UsageBook(half_life=HOUR, write_seconds=1.0).advance([queue()], held, T0 + 900)
    assert gpu_seconds(fresh["team-a"]) == 0.0  # without the status it would start over


def test_status_written_by_another_leader_replaces_what_was_kept() -> None:
    book = UsageBook(half_life=HOUR, write_seconds=1.0)
    book.advance([queue()], {}, T0)
    other = {"usage": {GPU: 5000.0}, "usageUpdatedAt": usage_timestamp(T0 + 100)}
    due = book.advance([queue(status=other)], {}, T0 + 100)["team-a"]
    assert gpu_seconds(due) == pytest.approx(5000.0)


def test_half_life_zero_keeps_and_writes_nothing_unless_the_queue_sets_one() -> None:
    book = UsageBook(half_life=0.0, write_seconds=1.0)
    held = {"team-a": {GPU: 8_000}, "team-b": {GPU: 8_000}}
    queues = [queue("team-a"), queue("team-b", half_life=HOUR)]
    book.advance(queues, held, T0)
    due = book.advance(queues, held, T0 + 60)
    assert set(due) == {"team-b"}


def test_written_status_parses_back_to_the_same_usage() -> None:
    book = UsageBook(half_life=HOUR, write_seconds=1.0)
    book.advance([queue()], {"team-a": {GPU: 8_000, "cpu": 4_000}}, T0)
    fields = book.advance([queue()], {}, T0 + 123.25)["team-a"]
    info = parse_queue(queue(status=fields))
    assert info.usage_at == pytest.approx(T0 + 123.25)
    assert info.usage[GPU] == pytest.approx(gpu_seconds(fields) * 1000)
    assert info.usage["cpu"] == pytest.approx(fields["usage"]["cpu"] * 1000)
