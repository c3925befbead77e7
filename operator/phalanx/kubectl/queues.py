"""`kubectl phalanx queues`: each queue's usage against its guarantee and capability.

Usage is computed the way the scheduler computes it (requests of the queue's pods on nodes,
children counted in their parents), from a fresh snapshot, not from Queue status, so the
table is right even while the operator is down. USAGE GPU-H is the queue's decayed past
usage (fair sharing over time) as the operator last wrote it to status.usage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from phalanx.core.admission.admit import seed_ledger
from phalanx.core.admission.members import build_works
from phalanx.core.model.names import CPU, GPU, MEMORY
from phalanx.core.snapshot.picture import Snapshot
from phalanx.core.snapshot.resources import format_amount
from phalanx.kubectl.table import format_table

COLUMNS = ((GPU, "GPUS"), (CPU, "CPU"), (MEMORY, "MEMORY"))
MILLI_HOURS = 1000.0 * 3600.0  # milli-GPU-seconds in a GPU-hour


@dataclass(frozen=True, slots=True)
class QueueRow:
    name: str
    depth: int
    state: str
    weight: int
    used: Mapping[str, int]
    guarantee: Mapping[str, int] | None
    capability: Mapping[str, int] | None
    running_groups: int
    waiting_groups: int
    usage: Mapping[str, float] | None = None  # decayed milli-unit-seconds, from status


def queue_rows(snapshot: Snapshot) -> list[QueueRow]:
    """One row per queue, parents before their children."""
    index = snapshot.index
    works = build_works(index)
    ledger = seed_ledger(index, works)
    running: dict[str, int] = {}
    waiting: dict[str, int] = {}
    for work in works:
        if len(work.running) >= work.min_member:
            running[work.queue] = running.get(work.queue, 0) + 1
        elif work.waiting:
            waiting[work.queue] = waiting.get(work.queue, 0) + 1
    rows = []
    for name in sorted(index.queues, key=lambda q: tuple(reversed(ledger.chain(q)))):
        queue = index.queues[name]
        rows.append(
            QueueRow(
                name=name,
                depth=len(ledger.chain(name)) - 1,
                state="Open" if queue.open else "Closed",
                weight=queue.weight,
                used=ledger.used.get(name, {}),
                guarantee=queue.guarantee,
                capability=queue.capability,
                running_groups=running.get(name, 0),
                waiting_groups=waiting.get(name, 0),
                usage=queue.usage,
            )
        )
    return rows


def usage_cell(resource: str, row: QueueRow) -> str:
    """`used/guarantee/capability`, `-` where a bound is not set."""

    def bound(limits: Mapping[str, int] | None) -> str:
        if limits is None or resource not in limits:
            return "-"
        return format_amount(resource, limits[resource])

    used = format_amount(resource, row.used.get(resource, 0))
    return f"{used}/{bound(row.guarantee)}/{bound(row.capability)}"


def gpu_hours_cell(row: QueueRow) -> str:
    """The decayed GPU usage in GPU-hours; `-` when none is kept."""
    amount = (row.usage or {}).get(GPU, 0.0)
    return f"{amount / MILLI_HOURS:.1f}" if amount > 0 else "-"


def format_queues(rows: Sequence[QueueRow]) -> str:
    headers = ["QUEUE", "STATE", "WEIGHT"]
    headers += [f"{title} USED/GUAR/CAP" for _, title in COLUMNS]
    headers += ["USAGE GPU-H", "RUNNING", "WAITING"]
    table = [
        [
            "  " * row.depth + row.name,
            row.state,
            str(row.weight),
            *(usage_cell(resource, row) for resource, _ in COLUMNS),
            gpu_hours_cell(row),
            str(row.running_groups),
            str(row.waiting_groups),
        ]
        for row in rows
    ]
    return format_table(headers, table)
