"""The HTTP endpoints every replica serves: /metrics, /healthz and /readyz.

Kubelet restarts a replica whose /healthz fails and keeps one whose /readyz fails out of
the metrics Service. Readiness is set by the operator (caches synced, or standing by as a
warm follower); liveness fails only when the operator reported heartbeats and then stopped,
which catches a wedged scheduling loop while the event loop still answers HTTP.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from phalanx.observe.metrics import Metrics


class Health:
    """Liveness and readiness state, written by the operator, read by the probes."""

    def __init__(
        self, stale_after_seconds: float | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ready = False
        self._reason = "starting"
        self._stale_after = stale_after_seconds
        self._clock = clock
        self._last_beat: float | None = None

    def set_ready(self, ready: bool, reason: str = "") -> None:
        self._ready = ready
        self._reason = reason or ("ready" if ready else "not ready")

    def beat(self) -> None:
        """Record that the scheduling loop is alive (call once per loop turn)."""
        self._last_beat = self._clock()

    @property
    def ready(self) -> bool:
        return self._ready

    @property
    def reason(self) -> str:
        return self._reason

    def alive(self) -> tuple[bool, str]:
        if self._stale_after is None or self._last_beat is None:
            return True, "ok"
        silent = self._clock() - self._last_beat
        if silent > self._stale_after:
            return False, f"scheduling loop silent for {silent:.0f}s (limit {self._stale_after:g}s)"
        return True, "ok"


def build_app(metrics: Metrics, health: Health) -> web.Application:
    async def serve_metrics(_: web.Request) -> web.Response:
        body = generate_latest(metrics.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_: web.Request) -> web.Response:
        alive, why = health.alive()
        return web.Response(status=200 if alive else 503, text=why + "\n")

    async def readyz(_: web.Request) -> web.Response:
        return web.Response(status=200 if health.ready else 503, text=health.reason + "\n")

    app = web.Application()
    app.router.add_get("/metrics", serve_metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app


@dataclass
class HttpServer:
    """A running endpoint server; `port` is the bound one (useful with port 0 in tests)."""

    runner: web.AppRunner
    host: str
    port: int

    async def close(self) -> None:
        await self.runner.cleanup()


async def start_http_server(
    metrics: Metrics, health: Health, host: str = "0.0.0.0", port: int = 8080
) -> HttpServer:
    runner = web.AppRunner(build_app(metrics, health), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound_port = int(runner.addresses[0][1])
    return HttpServer(runner=runner, host=host, port=bound_port)
