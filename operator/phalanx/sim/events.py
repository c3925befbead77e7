"""Event queue of the discrete-event simulation.

A heap of ``(time, priority, sequence)``: at equal times the priority decides
(finishes free capacity before arrivals ask for it, and the scheduling cycle
runs after both), and the insertion sequence breaks the remaining ties, so a
run is a pure function of its inputs.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from enum import IntEnum


class EventKind(IntEnum):
    """Kinds of event; the value is the tie-break priority at equal times."""

    FINISH = 0
    ARRIVAL = 1
    CYCLE = 2


@dataclass(frozen=True, slots=True, order=True)
class Event:
    time: float
    kind: EventKind
    seq: int
    job: str = field(default="", compare=False)
    attempt: int = field(default=0, compare=False)
    """The job's attempt a FINISH belongs to (an evicted attempt's finish is stale)."""


class EventQueue:
    """Min-heap of events ordered by (time, kind, insertion sequence)."""

    def __init__(self) -> None:
        self._heap: list[Event] = []
        self._seq = 0

    def push(self, time: float, kind: EventKind, job: str = "", attempt: int = 0) -> Event:
        event = Event(time, kind, self._seq, job, attempt)
        self._seq += 1
        heapq.heappush(self._heap, event)
        return event

    def pop(self) -> Event:
        return heapq.heappop(self._heap)

    def peek_time(self) -> float | None:
        return self._heap[0].time if self._heap else None

    def pop_batch(self) -> list[Event]:
        """Every event at the earliest time, in queue order."""
        if not self._heap:
            return []
        first = self.pop()
        batch = [first]
        while self._heap and self._heap[0].time == first.time:
            batch.append(self.pop())
        return batch

    def __len__(self) -> int:
        return len(self._heap)
