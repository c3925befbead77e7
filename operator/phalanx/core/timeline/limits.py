"""Runtime limits: the longest a gang runs, and the gangs that ran past it.

A gang's limit is its own (`GroupInfo.runtime_limit_seconds`, from its PodGroup or its
workload), else its queue's default, else its queue's maximum (as Slurm gives a job
with no time limit its partition's DefaultTime, else its MaxTime), each looked up along
the queue's parents; none at all: it runs as long as it likes, and plans count it as
never ending. A gang asking more than its queue's maximum is refused with a condition
naming both. The limit is enforced: once a gang has run its limit from its start (the
first start among its running pods), every running pod of it is evicted. That is what
makes the limit safe to plan with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from phalanx.core.admission.members import GroupWork
from phalanx.core.model.clock import clock_time
from phalanx.core.model.eviction import Eviction, EvictionReason
from phalanx.core.model.inputs import GroupInfo, PodInfo, QueueInfo
from phalanx.core.model.status import Problem, Reason, StatusCode


def _along(queue: str, queues: Mapping[str, QueueInfo], field: str) -> int | None:
    """The first value of `field` on the queue and its parents (a loop ends the walk)."""
    seen: set[str] = set()
    current: str | None = queue
    while current is not None and current in queues and current not in seen:
        seen.add(current)
        value: int | None = getattr(queues[current], field)
        if value is not None:
            return value
        current = queues[current].parent
    return None


def limit_of(group: GroupInfo | None, queues: Mapping[str, QueueInfo]) -> int | None:
    """The gang's runtime limit in seconds, None for no limit."""
    if group is None:
        return None
    if group.runtime_limit_seconds is not None:
        return group.runtime_limit_seconds
    default = _along(group.queue, queues, "default_runtime_limit_seconds")
    return default if default is not None else _along(
        group.queue, queues, "max_runtime_limit_seconds")


def over_maximum(group: GroupInfo | None, queues: Mapping[str, QueueInfo]) -> Problem | None:
    """A gang asking more than its queue's maximum runtime limit: refused, saying both."""
    if group is None or group.runtime_limit_seconds is None:
        return None
    maximum = _along(group.queue, queues, "max_runtime_limit_seconds")
    if maximum is None or group.runtime_limit_seconds <= maximum:
        return None
    message = (
        f"runtimeLimitSeconds {group.runtime_limit_seconds} is above the "
        f"maxRuntimeLimitSeconds {maximum} of queue {group.queue}"
    )
    return Problem(StatusCode.UNRESOLVABLE, Reason.INVALID_SPEC, message)


def started(pods: Iterable[PodInfo]) -> float | None:
    """When a running gang started: the first start among its pods (None: none started)."""
    starts = [p.started_at for p in pods if p.started_at is not None]
    return min(starts) if starts else None


def past_limit(
    works: Iterable[GroupWork], queues: Mapping[str, QueueInfo], now: float
) -> list[Eviction]:
    """Every running pod of each gang that has run its limit (pods already leaving are
    left to go): it is evicted, the group named as its own preemptor."""
    evictions: list[Eviction] = []
    for work in works:
        if not work.running or work.group is None:
            continue
        limit = limit_of(work.group, queues)
        began = started(work.running)
        if limit is None or began is None or now < began + limit:
            continue
        message = f"ran past its runtime limit of {limit}s (started at {clock_time(began)} UTC)"
        evictions.extend(
            Eviction(pod.key, work.key, EvictionReason.RUNTIME_LIMIT, work.key, message)
            for pod in work.running
            if not pod.terminating
        )
    return evictions

