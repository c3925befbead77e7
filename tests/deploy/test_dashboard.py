"""The Grafana dashboard only plots series the operator really exports."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from phalanx.observe.metrics import Metrics, sample_names

DASHBOARD = Path(__file__).resolve().parents[2] / "manifests" / "grafana" / "phalanx-dashboard.json"
METRIC = re.compile(r"\bphalanx_[a-z_]+\b")


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in panels(dashboard) for t in p.get("targets", [])]


def test_dashboard_is_valid_json_with_unique_panel_ids() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in panels(dashboard)]
    assert len(ids) == len(set(ids))
    assert dashboard["uid"] and dashboard["title"]


def test_every_referenced_metric_exists() -> None:
    exported = sample_names(Metrics().registry)
    referenced = {name for expr in expressions() for name in METRIC.findall(expr)}
    assert referenced, "the dashboard plots nothing"
    assert referenced <= exported, sorted(referenced - exported)


def test_every_metric_is_on_the_dashboard() -> None:
    families = {family.name for family in Metrics().registry.collect()}
    plotted = " ".join(expressions())
    assert {name for name in families if name not in plotted} == set()


def test_queries_use_the_datasource_variable() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    for panel in panels(dashboard):
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
