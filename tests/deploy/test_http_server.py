"""The /metrics, /healthz and /readyz endpoints kubelet and Prometheus call."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from phalanx.observe import Health, Metrics, start_http_server


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


Served = tuple[str, Metrics, Health, "Clock"]


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    metrics, clock = Metrics(), Clock()
    health = Health(stale_after_seconds=30, clock=clock)
    server = await start_http_server(metrics, health, host="127.0.0.1", port=0)
    try:
        yield f"http://127.0.0.1:{server.port}", metrics, health, clock
    finally:
        await server.close()


async def get(url: str) -> tuple[int, str, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, response.headers.get("Content-Type", ""), await response.text()


async def test_metrics_are_served_in_prometheus_text_format(served: Served) -> None:
    base, metrics, _, _ = served
    metrics.set_gpu_usage(allocated=3, free=5, free_unusable=1)
    status, content_type, body = await get(base + "/metrics")
    assert status == 200
    assert content_type.startswith("text/plain")
    assert "phalanx_gpus_free 5.0" in body
    assert "phalanx_gpus_free_unusable_whole_node 1.0" in body


async def test_not_ready_until_the_operator_says_so(served: Served) -> None:
    base, _, health, _ = served
    status, _, body = await get(base + "/readyz")
    assert (status, body.strip()) == (503, "starting")
    health.set_ready(True, "caches synced")
    status, _, body = await get(base + "/readyz")
    assert (status, body.strip()) == (200, "caches synced")
    health.set_ready(False, "lost the watch")
    assert (await get(base + "/readyz"))[0] == 503


async def test_alive_before_the_first_heartbeat(served: Served) -> None:
    base, _, _, _ = served
    assert (await get(base + "/healthz"))[0] == 200


async def test_liveness_fails_when_heartbeats_stop(served: Served) -> None:
    base, _, health, clock = served
    health.beat()
    clock.now += 29
    assert (await get(base + "/healthz"))[0] == 200
    clock.now += 2
    status, _, body = await get(base + "/healthz")
    assert status == 503
    assert "silent for 31s" in body
    health.beat()
    assert (await get(base + "/healthz"))[0] == 200


async def test_unknown_path_is_404(served: Served) -> None:
    base, _, _, _ = served
    assert (await get(base + "/nope"))[0] == 404
