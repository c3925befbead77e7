"""Observability of the operator: Prometheus metrics, health endpoints, structured logs."""

from phalanx.observe.gpu_usage import GpuUsage, gpu_usage
from phalanx.observe.metrics import Metrics, gang_size_class
from phalanx.observe.server import Health, HttpServer, start_http_server

__all__ = [
    "GpuUsage",
    "Health",
    "HttpServer",
    "Metrics",
    "gang_size_class",
    "gpu_usage",
    "start_http_server",
]
