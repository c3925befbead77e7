"""Waiting for a real cluster to reach a state: poll with a deadline (never sleep a fixed time)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from phalanx.cluster import LocalCluster


def eventually(probe: Callable[[], Any], timeout: float = 60.0) -> Any:
    """The first truthy value of `probe`, polled until `timeout` (then the last value)."""
    deadline = time.monotonic() + timeout
    value = probe()
    while not value and time.monotonic() < deadline:
        time.sleep(0.25)
        value = probe()
    return value


def get_json(cluster: LocalCluster, *args: str) -> Any:
    """`kubectl get ARGS -o json`, parsed."""
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def names(cluster: LocalCluster, *args: str) -> list[str]:
    """Names of the objects `kubectl get ARGS` lists (none once they are gone)."""
    return sorted(item["metadata"]["name"] for item in get_json(cluster, *args)["items"])


def gone(cluster: LocalCluster, *args: str) -> bool:
    """`kubectl get ARGS` finds nothing (NotFound for a named object)."""
    result = cluster.kubectl("get", *args, "-o", "name", check=False)
    if result.returncode != 0:
        return "NotFound" in result.stderr
    return not result.stdout.strip()
