"""When kube-apiserver answered each binding: its audit log (pods/binding creates only, see
phalanx.cluster.components.AUDIT_POLICY), read after a run.

The benchmark's watcher sees a binding when its watch event arrives, which on a loaded
machine lags the API server by seconds, unevenly: at bench-5000 every one of 20 gangs
"seen partly bound" (first to last watch event over 2 s) had had every binding answered
before the watcher saw the first one. The audit line's stageTimestamp is written by the API
server as the reply completes (microseconds), the same way whoever sent the binding, so the
bind times, the spreads within gangs and the rates are the server's, not the watcher's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

CREATED = 201


def binding_times(lines: Iterable[str], namespace: str) -> dict[str, float]:
    """Pod name -> epoch seconds of the first binding of it that succeeded (201)."""
    times: dict[str, float] = {}
    for line in lines:
        if not line.strip():
            continue
        event = json.loads(line)
        ref = event.get("objectRef") or {}
        if (ref.get("subresource") != "binding" or ref.get("namespace") != namespace
                or (event.get("responseStatus") or {}).get("code") != CREATED):
            continue
        moment = _epoch(str(event["stageTimestamp"]))
        name = str(ref.get("name"))
        if name not in times or moment < times[name]:
            times[name] = moment
    return times


def read_binding_times(path: Path, namespace: str) -> dict[str, float]:
    """`binding_times` of an audit log file; empty if there is none (audit off)."""
    if not path.is_file():
        return {}
    with path.open() as lines:
        return binding_times(lines, namespace)


def watch_lag(seen: Mapping[str, float], answered: Mapping[str, float]) -> dict[str, Any]:
    """How long after the API server's reply the watcher saw each binding: p50, p99, max."""
    lags = sorted(seen[name] - answered[name] for name in seen if name in answered)
    if not lags:
        return {}
    return {"pods": len(lags), "p50_s": _at(lags, 0.5), "p99_s": _at(lags, 0.99),
            "max_s": round(lags[-1], 3)}


def _at(ordered: Sequence[float], share: float) -> float:
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 3)


def _epoch(stamp: str) -> float:
    """RFC 3339 with microseconds (`2026-12-05T23:40:00.123456Z`) -> epoch seconds."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
