"""Structured logs: one JSON object per line, with the cycle, group and queue bound as context.

Context is kept in `structlog.contextvars`, so a value bound around a cycle or a group shows
up in every line logged beneath it, including lines from Kopf, aiohttp and other stdlib
loggers, which are routed through the same renderer.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal, TextIO

import structlog

LogFormat = Literal["json", "console"]


def configure_logging(
    level: str = "INFO", fmt: LogFormat = "json", stream: TextIO | None = None
) -> None:
    """Route structlog and stdlib logging to `stream` (default stderr), rendered as `fmt`."""
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
        structlog.processors.format_exc_info,
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level.upper())


def get_logger(name: str) -> Any:
    return structlog.stdlib.get_logger(name)


@contextmanager
def cycle_context(cycle: int) -> Iterator[None]:
    """Bind the scheduling cycle number to every log line inside the block."""
    with structlog.contextvars.bound_contextvars(cycle=cycle):
        yield


@contextmanager
def group_context(group: str, queue: str | None = None) -> Iterator[None]:
    """Bind a PodGroup (`namespace/name`) and its queue to every log line inside the block."""
    values: dict[str, Any] = {"group": group}
    if queue is not None:
        values["queue"] = queue
    with structlog.contextvars.bound_contextvars(**values):
        yield
