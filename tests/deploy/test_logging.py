"""JSON logs carry the cycle, group and queue of the work they describe."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from phalanx.observe.logging import configure_logging, cycle_context, get_logger, group_context


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    out = io.StringIO()
    configure_logging("INFO", "json", stream=out)
    yield out
    root.handlers, root.level = saved_handlers, saved_level
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_context_is_bound_to_lines_inside_and_dropped_after(stream: io.StringIO) -> None:
    log = get_logger("phalanx.test")
    with cycle_context(7), group_context("ml/train", queue="team-a"):
        log.info("placed", nodes=4)
    log.info("idle")
    placed, idle = lines(stream)
    assert placed["event"] == "placed"
    assert (placed["cycle"], placed["group"], placed["queue"]) == (7, "ml/train", "team-a")
    assert placed["nodes"] == 4
    assert placed["level"] == "info"
    assert "timestamp" in placed
    assert "group" not in idle and "cycle" not in idle


def test_stdlib_loggers_render_as_json_with_the_context(stream: io.StringIO) -> None:
    with cycle_context(3):
        logging.getLogger("kopf.objects").warning("watch restarted")
    (line,) = lines(stream)
    assert line["event"] == "watch restarted"
    assert line["cycle"] == 3
    assert line["logger"] == "kopf.objects"
    assert line["level"] == "warning"


def test_level_filters(stream: io.StringIO) -> None:
    get_logger("phalanx.test").debug("hidden")
    assert stream.getvalue() == ""


def test_exceptions_are_rendered_into_the_line(stream: io.StringIO) -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        get_logger("phalanx.test").exception("cycle failed")
    (line,) = lines(stream)
    assert "RuntimeError: boom" in str(line["exception"])
