"""The objects the operator writes, by size as the API server holds them after a run, and
its cycles' times from its JSON log: the 12,500-node table's "largest object Phalanx
writes" (goal: none above 512 KiB; etcd refuses a request above 1.5 MiB) and "cycle p95".

A NetworkTopology's status holds a row per rack and block, so it grows with the cluster;
a PodGroup's holds its plan (a node per pod) while its gang is bound; a Queue's, its
usage. Each is measured whole (metadata, spec and status, compact JSON), the largest of
each kind named.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.e2e.operator_log import quantile, read_log

GROUP = "/apis/scheduling.phalanx.io/v1alpha1"
LIMIT_BYTES = 512 * 1024


def written_paths(namespace: str) -> dict[str, str]:
    """Kind -> the list path of the objects whose status the operator writes."""
    return {"NetworkTopology": f"{GROUP}/networktopologies",
            "PodGroup": f"{GROUP}/namespaces/{namespace}/podgroups",
            "Queue": f"{GROUP}/queues"}


def largest(items: list[Mapping[str, Any]]) -> dict[str, Any]:
    """How many objects, the largest one's compact JSON size and name."""
    sizes = [(len(json.dumps(item, separators=(",", ":")).encode()),
              str(item.get("metadata", {}).get("name", ""))) for item in items]
    if not sizes:
        return {"objects": 0}
    size, name = max(sizes)
    return {"objects": len(sizes), "largest_bytes": size, "largest": name}


def written_objects(list_items: Callable[[str], Mapping[str, Any]],
                    namespace: str) -> dict[str, Any]:
    """Per kind (`largest`), and the largest of all against LIMIT_BYTES."""
    kinds = {kind: largest(list(list_items(path).get("items") or []))
             for kind, path in written_paths(namespace).items()}
    top = max(kinds.items(), key=lambda kv: kv[1].get("largest_bytes", 0))
    top_bytes = int(top[1].get("largest_bytes", 0))
    return {"by_kind": kinds, "largest_bytes": top_bytes, "largest_kind": top[0],
            "limit_bytes": LIMIT_BYTES, "within_limit": top_bytes <= LIMIT_BYTES}


def cycle_seconds(log: Path) -> dict[str, Any]:
    """The operator's cycles that started writes (its "cycle" log lines): count, p50, p95,
    max seconds; empty without a log."""
    if not log.is_file():
        return {}
    with log.open() as lines:
        cycles, _ = read_log(lines)
    seconds = [c.seconds for c in cycles.values()]
    if not seconds:
        return {"cycles": 0}
    return {"cycles": len(seconds), "p50": round(quantile(seconds, 0.5), 3),
            "p95": round(quantile(seconds, 0.95), 3), "max": round(max(seconds), 3)}
