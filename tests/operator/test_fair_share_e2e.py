"""Fair sharing over time on the real control plane (#32 item 4): the operator writes a
queue's decayed usage (status.usage, status.usageUpdatedAt) while its gang runs, and a
new operator process, started after the first has stopped, reads it back from the status
and continues from it instead of starting from nothing.

The operators are `python -m phalanx operator` processes, configured through the
environment (PHALANX_FAIR_SHARING__...): a one-hour half-life, usage written every
second. No test step waits for time to pass: each waits for a status to show something.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from operator_e2e import apply, eventually, gang, kubectl_json, start_operator, stop_operator

from phalanx.cluster import LocalCluster
from phalanx.core.admission.usage import kept

pytestmark = pytest.mark.e2e
GPU = "nvidia.com/gpu"
QUEUE = "fair-share-e2e"
HALF_LIFE = 3600.0
HISTORY = 1_000_000.0  # GPU-seconds: far more than the test's gang can run meanwhile


@pytest.fixture
def fair_queue(ready_nodes: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("PHALANX_FAIR_SHARING__USAGE_HALF_LIFE_SECONDS", str(HALF_LIFE))
    monkeypatch.setenv("PHALANX_FAIR_SHARING__USAGE_WRITE_SECONDS", "1")
    ready_nodes.apply([{"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "Queue",
                        "metadata": {"name": QUEUE}, "spec": {}}])
    yield QUEUE
    ready_nodes.kubectl("delete", "queues.scheduling.phalanx.io", QUEUE, "--ignore-not-found",
                        check=False)


async def queue_status(cluster: LocalCluster) -> dict[str, Any]:
    body = await kubectl_json(cluster, "get", "queues.scheduling.phalanx.io", QUEUE)
    return dict(body.get("status") or {})


def moment(status: dict[str, Any]) -> float:
    return datetime.fromisoformat(str(status["usageUpdatedAt"]).replace("Z", "+00:00")).timestamp()


async def test_usage_is_written_to_queue_status_and_survives_a_restart(
    ready_nodes: LocalCluster, namespace: str, fair_queue: str
) -> None:
    cluster = ready_nodes
    first = start_operator(cluster)
    try:
        await apply(cluster, gang("steady", 2, gpus=8, queue=fair_queue), namespace)

        async def accrued() -> dict[str, Any] | None:
            status = await queue_status(cluster)
            return status if (status.get("usage") or {}).get(GPU, 0) > 0 else None

        written = await eventually(accrued, 90)
    finally:
        stop_operator(first)
    assert written["allocated"][GPU] == "16"
    # What the queue used before, as a long history would have left it; the status is
    # the only place a new operator can learn it from.
    history = {"usage": {GPU: HISTORY}, "usageUpdatedAt": written["usageUpdatedAt"]}
    cluster.kubectl("patch", "queues.scheduling.phalanx.io", QUEUE, "--subresource=status",
                    "--type=merge", "-p", json.dumps({"status": history}))
    second = start_operator(cluster)
    try:
        async def rewritten() -> dict[str, Any] | None:
            status = await queue_status(cluster)
            return status if moment(status) > moment(written) else None

        resumed = await eventually(rewritten, 90)
    finally:
        stop_operator(second)
    elapsed = moment(resumed) - moment(written)
    low = HISTORY * kept(elapsed, HALF_LIFE)  # the history decayed, nothing added
    high = HISTORY + 16 * elapsed  # the history, and 16 GPUs all along
    assert low <= resumed["usage"][GPU] <= high
