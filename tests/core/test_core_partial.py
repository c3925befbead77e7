"""Partial gangs are released by the core: a gang left short of its minMember past its
deadline gets its placed pods deleted (they have a controller) or a Warning (they have
none); when it was first seen partial rides from one cycle to the next on its decision."""

from __future__ import annotations

from dataclasses import replace

from core_builders import group, node, pod, snapshot_of

from phalanx.core import CycleResult, SchedulerConfig, Snapshot, run_cycle
from phalanx.core.model.names import GroupKey
from phalanx.core.parse import parse_pod, parse_pod_group

KEY = GroupKey("default/g")
CONFIG = SchedulerConfig(partial_grace_seconds=10)


def partial(controlled: bool = True, phase: str = "Inqueue", **fields: object) -> Snapshot:
    """Two of a gang of three placed (n0, n1 full), the third fits nowhere."""
    return snapshot_of([
        node("n0"), node("n1"),
        pod("g-0", gpus=8, group="g", node_name="n0", controlled=controlled),
        pod("g-1", gpus=8, group="g", node_name="n1", controlled=controlled),
        pod("g-2", gpus=8, group="g"),
        group("g", 3, phase=phase, **fields),
    ])  # fmt: skip


def cycle(snapshot: Snapshot, now: float, since: float | None = None) -> CycleResult:
    if since is not None:
        snapshot = replace(snapshot, partial_since={KEY: since})
    return run_cycle(snapshot, CONFIG, now)


def test_a_partial_gang_is_timed_from_when_it_was_first_seen_and_not_released_before() -> None:
    first = cycle(partial(), now=100.0)
    assert first.decision(KEY).partial_since == 100.0  # type: ignore[union-attr]
    later = cycle(partial(), now=109.0, since=100.0)
    assert later.releases == ()
    assert later.decision(KEY).partial_since == 100.0  # type: ignore[union-attr]


def test_past_its_deadline_its_placed_pods_are_released_and_the_clock_starts_anew() -> None:
    result = cycle(partial(), now=110.0, since=100.0)
    [release] = result.releases
    assert (release.group, release.pods, release.reason) == (
        KEY, ("default/g-0", "default/g-1"), "PartialGangReleased"
    )
    assert release.message == (
        "2 of 3 pods were placed and the rest could not be; "
        "deleted the placed pods so their controller recreates them"
    )
    assert result.decision(KEY).partial_since is None  # type: ignore[union-attr]


def test_pods_without_a_controller_are_left_running_with_a_warning_each_cycle() -> None:
    result = cycle(partial(controlled=False), now=110.0, since=100.0)
    [release] = result.releases
    assert (release.pods, release.reason) == ((), "PartialGang")
    assert release.message == (
        "2 of 3 pods are placed and the rest cannot be; "
        "the placed pods have no controller and are left running"
    )
    assert result.decision(KEY).partial_since == 100.0  # type: ignore[union-attr]


def test_a_longer_schedule_timeout_is_the_deadline() -> None:
    snapshot = partial(schedule_timeout_seconds=30)
    assert cycle(snapshot, now=129.0, since=100.0).releases == ()
    assert len(cycle(snapshot, now=130.0, since=100.0).releases) == 1


def test_the_failed_node_that_took_the_rest_is_named() -> None:
    snapshot = partial(phase="Unknown", placed_nodes=("n0", "n1", "n9"))
    [release] = cycle(snapshot, now=110.0, since=100.0).releases
    assert "the rest could not be (node n9 (deleted) failed); deleted" in release.message


def test_a_gang_that_ran_and_finished_or_is_running_is_not_partial() -> None:
    for phase in ("Running", "Completed"):
        result = cycle(partial(phase=phase), now=110.0, since=100.0)
        assert result.releases == ()
        assert result.decision(KEY).partial_since is None  # type: ignore[union-attr]


def test_without_a_time_handed_back_nothing_is_ever_due() -> None:
    """`phalanx plan` and the simulator hand back none: a partial gang is never released."""
    assert cycle(partial(), now=1e9).releases == ()


def test_controller_phase_and_placement_are_read_from_the_objects() -> None:
    owner = {"kind": "Job", "name": "j", "uid": "u", "apiVersion": "batch/v1"}
    body = {"metadata": {"name": "p", "namespace": "ml",
                         "ownerReferences": [{**owner, "controller": True}]},
            "spec": {"containers": [{"name": "c"}]}}  # fmt: skip
    assert parse_pod(body).controlled
    body["metadata"]["ownerReferences"] = [owner]  # owned, not controlled
    assert not parse_pod(body).controlled
    podgroup = {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
                "metadata": {"name": "g", "namespace": "ml"}, "spec": {"minMember": 2},
                "status": {"phase": "Unknown", "placement": {"nodes": ["a", "b"]}}}  # fmt: skip
    info = parse_pod_group(podgroup)
    assert (info.phase, info.placed_nodes) == ("Unknown", ("a", "b"))
    podgroup["status"] = {"placement": "garbage"}  # written by us: never fails the group
    info = parse_pod_group(podgroup)
    assert (info.phase, info.placed_nodes) == ("Pending", ())
