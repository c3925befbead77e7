"""One finding of `kubectl phalanx install-check`: what was looked at, and how it stands.

Shared by the check modules (CRDs, webhooks, operator, workload kinds, nodes, topology) so
the report orders, counts and prints them alike.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


class Status(enum.IntEnum):
    """Worse is larger; any FAIL makes the check exit non-zero."""

    OK = 0
    NOTE = 1  # worth knowing, nothing to fix (a workload kind not installed)
    WARN = 2  # works, but something a person should look at
    FAIL = 3  # Phalanx cannot work as installed

    @property
    def word(self) -> str:
        return {Status.OK: "ok", Status.NOTE: "note", Status.WARN: "warn", Status.FAIL: "FAIL"}[
            self
        ]


@dataclass(frozen=True, slots=True)
class Check:
    area: str  # "CRDs", "webhook", "operator", "workloads", "nodes", "topology"
    subject: str  # what was looked at: a CRD, a webhook, a Lease, a kind, a level
    status: Status
    detail: str


def worst(statuses: Iterable[Status]) -> Status:
    return max(statuses, default=Status.OK)


def listed(names: Iterable[str], limit: int = 5) -> str:
    """`a, b, c and 12 more`: enough names to find them, not a wall of text."""
    names = sorted(names)
    shown = ", ".join(names[:limit])
    return f"{shown} and {len(names) - limit} more" if len(names) > limit else shown
