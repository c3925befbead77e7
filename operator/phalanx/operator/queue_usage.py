"""Each Queue's decayed usage (fair sharing over time), kept by the shell and written to
status.usage / status.usageUpdatedAt, where the core reads it back (parse/usage.py).

The math is the core's (`phalanx.core.admission.usage`): every cycle the usage is
advanced by the allocation each queue held since the last cycle, integrated exactly.
It is written at most every `write_seconds` per queue, so an idle or busy cluster costs
one Queue status write per queue per interval; the core meanwhile sees usage up to that
old, a few seconds of a half-life of hours. A new operator (restart, leader change)
starts from what status holds: usage as of usageUpdatedAt, with the queues' allocation
when it starts taken to have run since (pods keep running while no scheduler is there).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from phalanx.core.admission.usage import accrue, half_life_of
from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.inputs import QueueInfo
from phalanx.core.parse.queue import parse_queue
from phalanx.core.parse.usage import MILLI
from phalanx.operator.cache import Body, object_key

# status newer than what is kept by more than this was written by another replica (our
# own write comes back rounded to the microsecond)
STATUS_SLACK = 1.0
Amounts = Mapping[str, Mapping[str, int]]  # queue -> resource -> milli-units


@dataclass(slots=True)
class _Kept:
    usage: dict[str, float]  # milli-unit-seconds, decayed to `at`
    at: float
    holding: Mapping[str, int]  # the allocation since `at`
    written: float | None = None  # when last offered to status


def usage_timestamp(now: float) -> str:
    """RFC 3339 with microseconds: usage is decayed to this exact moment."""
    moment = datetime.datetime.fromtimestamp(now, tz=datetime.UTC)
    return moment.isoformat().replace("+00:00", "Z")


def usage_status(usage: Mapping[str, float], at: float) -> dict[str, Any]:
    """The status fields: resource-seconds in whole units (GPU-seconds, core-seconds,
    byte-seconds), and when."""
    shown = {r: round(u / MILLI, 3) for r, u in sorted(usage.items()) if u / MILLI >= 0.001}
    return {"usage": shown, "usageUpdatedAt": usage_timestamp(at)}


class UsageBook:
    def __init__(self, half_life: float, write_seconds: float) -> None:
        self.half_life = half_life  # the global one; a Queue may set its own
        self.write_seconds = write_seconds
        self._kept: dict[str, _Kept] = {}

    def advance(
        self, queues: Iterable[Body], amounts: Amounts, now: float
    ) -> dict[str, dict[str, Any]]:
        """Advance each queue's usage to `now`; the status fields of those due a write."""
        due: dict[str, dict[str, Any]] = {}
        seen: set[str] = set()
        for body in queues:
            name = object_key(body)
            info = _parsed(body)
            if info is None or half_life_of(info, self.half_life) <= 0:
                continue
            seen.add(name)
            kept = self._step(name, info, amounts.get(name, {}), now)
            if kept.written is None or now - kept.written >= self.write_seconds:
                kept.written = now
                due[name] = usage_status(kept.usage, kept.at)
        self._kept = {name: kept for name, kept in self._kept.items() if name in seen}
        return due

    def _step(self, name: str, info: QueueInfo, holding: Mapping[str, int], now: float) -> _Kept:
        """The queue's usage at `now`, from what was kept, or from status when status is
        newer (first cycle, or another replica led meanwhile)."""
        half_life = half_life_of(info, self.half_life)
        kept = self._kept.get(name)
        if kept is None or kept.at + STATUS_SLACK < info.usage_at <= now:
            since = info.usage_at if 0 < info.usage_at <= now else now
            kept = self._kept[name] = _Kept(dict(info.usage), since, holding)
        kept.usage = accrue(kept.usage, kept.holding, now - kept.at, half_life)
        kept.at = now
        kept.holding = holding
        return kept


def _parsed(body: Body) -> QueueInfo | None:
    try:
        return parse_queue(body)
    except InvalidObject:
        return None
