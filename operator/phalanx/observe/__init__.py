"""Observability of the operator: Prometheus metrics, health endpoints, structured logs."""

from phalanx.observe.metrics import Metrics, gang_size_class
from phalanx.observe.server import Health, HttpServer, start_http_server

__all__ = ["Health", "HttpServer", "Metrics", "gang_size_class", "start_http_server"]
