"""How a decision's message names a moment: "13:02" (UTC), the time of day a user reads
next to a date-less Event or condition."""

from __future__ import annotations

from datetime import UTC, datetime


def clock_time(moment: float) -> str:
    """Epoch seconds as HH:MM in UTC (messages add "UTC" themselves)."""
    return datetime.fromtimestamp(moment, UTC).strftime("%H:%M")
