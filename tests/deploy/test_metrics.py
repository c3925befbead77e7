"""The metrics facade: names, labels and values a Prometheus user alerts on."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from phalanx.observe.metrics import Metrics, gang_size_class, sample_names


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_each_instance_has_its_own_registry() -> None:
    first, second = Metrics(), Metrics()
    first.record_binding(ok=True)
    assert value(first, "phalanx_bindings_total") == 1
    assert value(second, "phalanx_bindings_total") == 0


def test_a_given_registry_is_used() -> None:
    registry = CollectorRegistry()
    Metrics(registry).observe_cycle(0.02)
    assert registry.get_sample_value("phalanx_cycle_duration_seconds_count") == 1


def test_cycle_duration_histogram() -> None:
    metrics = Metrics()
    metrics.observe_cycle(0.003)
    metrics.observe_cycle(0.2)
    assert value(metrics, "phalanx_cycle_duration_seconds_count") == 2
    assert value(metrics, "phalanx_cycle_duration_seconds_sum") == pytest.approx(0.203)
    assert value(metrics, "phalanx_cycle_duration_seconds_bucket", le="0.005") == 1
    assert value(metrics, "phalanx_cycle_duration_seconds_bucket", le="0.25") == 2


def test_group_phases_replace_previous_counts() -> None:
    metrics = Metrics()
    metrics.set_group_phases({("Pending", "team-a"): 3, ("Running", "team-a"): 1})
    metrics.set_group_phases({("Running", "team-a"): 4})
    assert value(metrics, "phalanx_podgroups", phase="Running", queue="team-a") == 4
    # A phase no group is in any more disappears instead of keeping its stale count.
    assert value(metrics, "phalanx_podgroups", phase="Pending", queue="team-a") is None


def test_bindings_and_failures_by_reason() -> None:
    metrics = Metrics()
    metrics.record_binding(ok=True)
    metrics.record_binding(ok=True)
    metrics.record_binding(ok=False, reason="Conflict")
    metrics.record_binding(ok=False)
    assert value(metrics, "phalanx_bindings_total") == 2
    assert value(metrics, "phalanx_binding_failures_total", reason="Conflict") == 1
    assert value(metrics, "phalanx_binding_failures_total", reason="Unknown") == 1


def test_gpu_usage_gauges() -> None:
    metrics = Metrics()
    metrics.set_gpu_usage(allocated=12, free=20, free_unusable=5)
    assert value(metrics, "phalanx_gpus_allocated") == 12
    assert value(metrics, "phalanx_gpus_free") == 20
    assert value(metrics, "phalanx_gpus_free_unusable_whole_node") == 5


def test_api_errors_by_verb_and_code() -> None:
    metrics = Metrics()
    metrics.record_api_error("create", 409)
    metrics.record_api_error("create", "409")
    metrics.record_api_error("patch", 500)
    assert value(metrics, "phalanx_api_errors_total", verb="create", code="409") == 2
    assert value(metrics, "phalanx_api_errors_total", verb="patch", code="500") == 1


def test_gang_time_to_running_by_size_class() -> None:
    metrics = Metrics()
    metrics.observe_gang_running(size=8, seconds=40)
    metrics.observe_gang_running(size=6, seconds=70)
    assert value(metrics, "phalanx_gang_time_to_running_seconds_count", size="5-8") == 2
    assert value(metrics, "phalanx_gang_time_to_running_seconds_bucket", size="5-8", le="60.0") == 1


def test_leader_gauge() -> None:
    metrics = Metrics()
    metrics.set_leader(True)
    assert value(metrics, "phalanx_leader") == 1
    metrics.set_leader(False)
    assert value(metrics, "phalanx_leader") == 0


@pytest.mark.parametrize(
    ("size", "label"),
    [
        (1, "1"),
        (2, "2"),
        (3, "3-4"),
        (4, "3-4"),
        (5, "5-8"),
        (64, "33-64"),
        (1024, "513-1024"),
        (5000, ">1024"),
    ],
)
def test_gang_size_classes(size: int, label: str) -> None:
    assert gang_size_class(size) == label


def test_gang_size_must_be_positive() -> None:
    with pytest.raises(ValueError):
        gang_size_class(0)


def test_sample_names_cover_unused_labelled_metrics() -> None:
    names = sample_names(Metrics().registry)
    assert {
        "phalanx_cycle_duration_seconds_bucket",
        "phalanx_podgroups",
        "phalanx_gang_time_to_running_seconds_count",
        "phalanx_bindings_total",
        "phalanx_binding_failures_total",
        "phalanx_gpus_allocated",
        "phalanx_gpus_free",
        "phalanx_gpus_free_unusable_whole_node",
        "phalanx_api_errors_total",
        "phalanx_binding_in_flight_limit",
    } <= names
