"""How much of their runtime limits gangs really run, learned from the gangs that ran to
their end: the median share, 1 until there are enough of them."""

from __future__ import annotations

from core_builders import group, pod

from phalanx.core.model.inputs import FinishedRun, QueueInfo
from phalanx.core.parse.pod import parse_pod
from phalanx.core.timeline.limits import ACCURACY_RUNS, finished_runs, limit_accuracy


def test_the_median_share_once_there_are_enough_runs() -> None:
    runs = [FinishedRun(share * 100, 100.0) for share in (0.1, 0.2, 0.5, 0.6, 0.9)] * 2
    assert limit_accuracy(runs) == 0.5
    assert limit_accuracy(runs[: ACCURACY_RUNS - 1]) == 1.0
    assert limit_accuracy([FinishedRun(300.0, 100.0)] * ACCURACY_RUNS) == 1.0  # capped


def test_a_gang_counts_once_all_its_pods_succeeded() -> None:
    done = [pod("d-0", phase="Succeeded", group="d", started_at=10.0, finished_at=50.0),
            pod("d-1", phase="Succeeded", group="d", started_at=20.0, finished_at=70.0)]
    going = [pod("g-0", phase="Succeeded", group="g", started_at=10.0, finished_at=50.0),
             pod("g-1", group="g", node_name="n0", started_at=10.0)]
    groups = {g.key: g for g in (group("d", 2, runtime_limit_seconds=100),
                                 group("g", 2, runtime_limit_seconds=100))}  # fmt: skip
    assert finished_runs([*done, *going], groups, {}) == [FinishedRun(60.0, 100.0)]
    by_queue = {"default": QueueInfo("default", default_runtime_limit_seconds=200)}
    plain = {g.key: g for g in (group("d", 2),)}
    assert finished_runs(done, plain, by_queue) == [FinishedRun(60.0, 200.0)]
    assert finished_runs(done, plain, {}) == []  # no limit: nothing to learn


def test_a_succeeded_pod_ends_when_its_last_container_does() -> None:
    status = {"phase": "Succeeded", "startTime": "2026-12-05T10:00:00Z", "containerStatuses": [
        {"state": {"terminated": {"finishedAt": "2026-12-05T10:30:00Z"}}},
        {"state": {"terminated": {"finishedAt": "2026-12-05T10:40:00Z"}}}]}
    obj = {"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": []},
           "status": status}  # fmt: skip
    parsed = parse_pod(obj)
    assert parsed.started_at is not None and parsed.finished_at is not None
    assert parsed.finished_at - parsed.started_at == 2400.0
    assert parse_pod({**obj, "status": {**status, "phase": "Failed"}}).finished_at is None
