"""Prometheus metrics of the scheduler, behind a small typed facade.

Each `Metrics` owns its registry, so two operators in one test process (or one test and the
next) never share counters. The operator calls the facade; nothing else touches the
prometheus_client objects, so metric names live in this file only.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

CYCLE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
TIME_TO_RUNNING_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0)
LEASE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)
# Upper bounds of the gang size classes used as the `size` label (few values: low cardinality).
GANG_SIZE_BOUNDS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def gang_size_class(size: int) -> str:
    """The `size` label of a gang: `1`, `2`, `3-4`, `5-8`, ... `>1024`."""
    if size < 1:
        raise ValueError(f"gang size must be >= 1, got {size}")
    lower = 1
    for bound in GANG_SIZE_BOUNDS:
        if size <= bound:
            return str(bound) if lower == bound else f"{lower}-{bound}"
        lower = bound + 1
    return f">{GANG_SIZE_BOUNDS[-1]}"


class Metrics:
    """The scheduler's metrics; one instance per operator process."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self._cycle = Histogram(
            "phalanx_cycle_duration_seconds",
            "Wall time of one scheduling cycle (snapshot to decisions).",
            buckets=CYCLE_BUCKETS,
            registry=r,
        )
        self._groups = Gauge(
            "phalanx_podgroups", "PodGroups by phase and queue.", ["phase", "queue"], registry=r
        )
        self._time_to_running = Histogram(
            "phalanx_gang_time_to_running_seconds",
            "Time from a PodGroup's creation until all its minMember pods were placed.",
            ["size"],
            buckets=TIME_TO_RUNNING_BUCKETS,
            registry=r,
        )
        self._bindings = Counter(
            "phalanx_bindings", "Pods placed (bound or un-gated) by Phalanx.", registry=r
        )
        self._binding_failures = Counter(
            "phalanx_binding_failures",
            "Pod placements that the API server refused, by reason.",
            ["reason"],
            registry=r,
        )
        self._evictions = Counter(
            "phalanx_evictions",
            "Pods evicted for a preemptor, by reason (Preempted, Reclaimed).",
            ["reason"],
            registry=r,
        )
        self._gpus_evicted = Counter(
            "phalanx_evicted_gpus",
            "GPUs requested by the pods evicted, by reason (Preempted, Reclaimed).",
            ["reason"],
            registry=r,
        )
        self._evictions_refused = Counter(
            "phalanx_evictions_refused",
            "Pod evictions the API server refused (a PodDisruptionBudget).",
            registry=r,
        )
        self._gpus_allocated = Gauge(
            "phalanx_gpus_allocated", "GPUs requested by pods bound to nodes.", registry=r
        )
        self._gpus_free = Gauge("phalanx_gpus_free", "Allocatable GPUs not in use.", registry=r)
        self._gpus_free_unusable = Gauge(
            "phalanx_gpus_free_unusable_whole_node",
            "Free GPUs on nodes that are partly busy: unusable for a whole-node request "
            "(fragmentation).",
            registry=r,
        )
        self._binding_limit = Gauge(
            "phalanx_binding_in_flight_limit",
            "Binding requests allowed in flight now; follows the API server's reply time "
            "(binding_reply_target_seconds), at most binding_concurrency.",
            registry=r,
        )
        self._api_errors = Counter(
            "phalanx_api_errors",
            "Failed Kubernetes API calls, by verb and HTTP status code.",
            ["verb", "code"],
            registry=r,
        )
        self._leader = Gauge(
            "phalanx_leader", "1 while this replica holds the leader Lease, else 0.", registry=r
        )
        self._lease_attempt = Histogram(
            "phalanx_leader_lease_attempt_seconds",
            "Wall time of one attempt to acquire or renew the leader Lease (read + write); "
            "the renew deadline must stay well above its tail.",
            buckets=LEASE_BUCKETS,
            registry=r,
        )

    def observe_lease_attempt(self, seconds: float) -> None:
        self._lease_attempt.observe(seconds)

    def observe_cycle(self, seconds: float) -> None:
        self._cycle.observe(seconds)

    def set_group_phases(self, counts: Mapping[tuple[str, str], int]) -> None:
        """Replace all PodGroup counts; keys are `(phase, queue)`. Absent keys drop to nothing."""
        self._groups.clear()
        for (phase, queue), count in counts.items():
            self._groups.labels(phase=phase, queue=queue).set(count)

    def observe_gang_running(self, size: int, seconds: float) -> None:
        self._time_to_running.labels(size=gang_size_class(size)).observe(seconds)

    def record_binding(self, ok: bool, reason: str = "") -> None:
        """One pod placement: `ok`, or failed for `reason` (e.g. `Conflict`, `NotFound`)."""
        if ok:
            self._bindings.inc()
        else:
            self._binding_failures.labels(reason=reason or "Unknown").inc()

    def record_eviction(self, reason: str, gpus: float) -> None:
        """One pod evicted for `reason`, freeing `gpus`."""
        self._evictions.labels(reason=reason).inc()
        self._gpus_evicted.labels(reason=reason).inc(gpus)

    def record_eviction_refused(self, pods: int) -> None:
        self._evictions_refused.inc(pods)

    def set_gpu_usage(self, allocated: float, free: float, free_unusable: float) -> None:
        self._gpus_allocated.set(allocated)
        self._gpus_free.set(free)
        self._gpus_free_unusable.set(free_unusable)

    def set_binding_limit(self, limit: int) -> None:
        self._binding_limit.set(limit)

    def record_api_error(self, verb: str, code: int | str) -> None:
        self._api_errors.labels(verb=verb, code=str(code)).inc()

    def set_leader(self, leader: bool) -> None:
        self._leader.set(1 if leader else 0)


def sample_names(registry: CollectorRegistry) -> frozenset[str]:
    """Every series name the registry can expose (with `_total`, `_bucket`... suffixes).

    Labelled metrics expose no samples until first used, so names come from the metric types.
    """
    suffixes = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_count", "_sum", "_created"),
        "summary": ("_count", "_sum", "_created", ""),
        "gauge": ("",),
    }
    names: set[str] = set()
    for family in registry.collect():
        names.update(family.name + suffix for suffix in suffixes.get(family.type, ("",)))
    return frozenset(names)
