"""Backoff after a scheduling timeout: who waits, and for how long.

A group past its `scheduleTimeoutSeconds` is not dropped (it stays queued), but it is
tried only every `delay` seconds, doubling from `backoff_initial_seconds` up to
`backoff_max_seconds`: a gang that cannot fit must not cost a search every cycle. The
core decides this like any other scheduling policy; the shell only carries each group's
`Backoff` from one cycle's decision to the next cycle's snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.core.model.config import SchedulerConfig
from phalanx.core.model.inputs import GroupInfo


@dataclass(frozen=True, slots=True)
class Backoff:
    """The group is next tried at `until` (snapshot time, seconds); `delay` is the wait
    that led there, doubled at the next timeout."""

    delay: float
    until: float


def is_held(backoff: Backoff | None, now: float) -> bool:
    """The group waits out its backoff this cycle: it is not tried."""
    return backoff is not None and backoff.until > now


def next_backoff(
    group: GroupInfo | None,
    scheduled: bool,
    previous: Backoff | None,
    now: float,
    config: SchedulerConfig,
) -> Backoff | None:
    """The backoff after a cycle that tried the group: None unless it has a timeout,
    is still not scheduled, and has waited past that timeout since it was created."""
    if group is None or scheduled or group.schedule_timeout_seconds is None:
        return None
    if now - group.creation < group.schedule_timeout_seconds:
        return None
    if previous is None:
        delay = config.backoff_initial_seconds
    else:
        delay = min(previous.delay * 2, config.backoff_max_seconds)
    return Backoff(delay, now + delay)
