"""`phalanx plan`: run one scheduling cycle on Kubernetes objects from a file.

Input is what `kubectl get nodes,pods,pg,queues,networktopologies,priorityclasses -A
-o yaml` prints (a `kind: List`) or a multi-document YAML; `-f -` reads stdin.
Malformed input exits with status 2 and a message naming the object and field. Besides
the decisions, it says when each waiting group is expected to start, played forward from
the runtime limits of what runs (as Slurm's `squeue --start`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import yaml

from phalanx.core.cycle import run_cycle
from phalanx.core.model.device_share import DEVICE
from phalanx.core.model.dra import ClaimAllocation
from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.result import Binding, CycleResult, ExpectedStart
from phalanx.core.parse import snapshot_from_objects
from phalanx.core.snapshot.picture import Snapshot

INVALID_INPUT = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f", "--filename", required=True, help="YAML file of Kubernetes objects ('-' for stdin)"
    )
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    parser.add_argument(
        "--now",
        type=float,
        default=None,
        help="the time of the cycle, seconds since the epoch (default: now); it decides "
        "which holds (status.nominated) have expired and which gangs waited long enough "
        "for a reservation",
    )


def run(args: argparse.Namespace) -> int:
    try:
        snapshot = load(args.filename)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return INVALID_INPUT
    now = time.time() if args.now is None else args.now
    result = run_cycle(snapshot, now=now, estimate=True)
    try:
        print(to_json(result) if args.output == "json" else to_table(result))
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the final flush
    return 0


class InputError(Exception):
    """The input could not be read as Kubernetes objects."""


def load(filename: str) -> Snapshot:
    source = "stdin" if filename == "-" else filename
    try:
        text = sys.stdin.read() if filename == "-" else _read(filename)
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except OSError as error:
        raise InputError(f"{source}: {error.strerror or error}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise InputError(f"{source}: invalid YAML: {error}") from None
    for number, document in enumerate(documents, start=1):
        if not isinstance(document, dict):
            raise InputError(f"{source}: document {number} is not an object")
    try:
        return snapshot_from_objects(documents, strict=True)
    except InvalidObject as error:
        raise InputError(f"{source}: {error}") from None
    except (TypeError, ValueError, AttributeError) as error:
        raise InputError(f"{source}: malformed object: {error}") from None


def _read(filename: str) -> str:
    with open(filename, encoding="utf-8") as handle:
        return handle.read()


def to_json(result: CycleResult) -> str:
    document: dict[str, Any] = {
        "bindings": [
            {"pod": b.pod, "node": b.node, "devices": [
                {"index": d.index, "fraction": d.fraction} for d in b.devices
            ], "claims": [_claim(c) for c in b.claims]}
            for b in result.bindings
        ],
        "groups": [
            {
                "group": g.group,
                "scheduled": g.scheduled,
                "placed": g.placed,
                "reason": str(g.reason),
                "message": g.message,
            }
            for g in result.groups
        ],
        "evictions": [
            {
                "pod": e.pod,
                "group": e.group,
                "reason": str(e.reason),
                "preemptor": e.preemptor,
                "work_lost_gpu_hours": round(e.work_lost_gpu_seconds / 3600, 3),
                "message": e.message,
            }
            for e in result.evictions
        ],
        "expected_starts": [
            {
                "group": e.group,
                "at": _moment(e.at),
                "waits_for": list(e.waits_for),
                "message": e.message,
            }
            for e in result.expected_starts
        ],
    }
    return json.dumps(document, indent=2)


def _claim(allocation: ClaimAllocation) -> dict[str, Any]:
    """A DRA allocation as the claim's status.allocation would hold it; `claim` null for
    one a template will make (named in the pod's status once it exists)."""
    return {
        "claim": allocation.claim or None,
        "entry": allocation.entry,
        "node": allocation.node,
        "devices": [
            {"request": r.request, **dict(zip(("driver", "pool", "device"), r.device, strict=True))}
            for r in allocation.results
        ],
    }


def _moment(at: float | None) -> str | None:
    """RFC 3339 in whole seconds (as Kubernetes writes times); None: unknown."""
    if at is None:
        return None
    return datetime.fromtimestamp(int(at), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def to_table(result: CycleResult) -> str:
    groups = [("GROUP", "SCHEDULED", "PLACED", "REASON", "MESSAGE")]
    groups += [
        (g.group, str(g.scheduled).lower(), str(g.placed), str(g.reason), g.message)
        for g in result.groups
    ]
    bindings = [("POD", "NODE", "GPUS", "GROUP")]
    bindings += [(b.pod, b.node, _devices(b), b.group) for b in result.bindings]
    text = _columns(groups) + "\n\n" + _columns(bindings)
    if result.evictions:
        evictions = [("EVICT", "GROUP", "REASON", "PREEMPTOR")]
        evictions += [
            (e.pod, e.group or "<none>", str(e.reason), e.preemptor) for e in result.evictions
        ]
        text += "\n\n" + _columns(evictions)
    if result.expected_starts:
        text += "\n\n" + _columns(_expected_rows(result.expected_starts))
    return text


def _expected_rows(expected: Sequence[ExpectedStart]) -> list[tuple[str, ...]]:
    """When each waiting group is expected to start (as Slurm's `squeue --start`):
    `unknown` when it waits for work with no runtime limit."""
    rows: list[tuple[str, ...]] = [("WAITING", "EXPECTED-START", "MESSAGE")]
    rows += [(e.group, _moment(e.at) or "unknown", e.message) for e in expected]
    return rows


def _devices(binding: Binding) -> str:
    """GPU devices as `0,1` (whole) or `3:0.25` (part of device 3); `-` for none."""
    parts = [
        str(d.index) if d.milli == DEVICE else f"{d.index}:{d.fraction:g}" for d in binding.devices
    ]
    return ",".join(parts) or "-"


def _columns(rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)
