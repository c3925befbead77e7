"""Kubernetes' own PodGroup gets the condition kube-scheduler would write, and no more."""

from __future__ import annotations

from typing import Any

from operator_fakes import FakeApi

from phalanx.core.model.names import GroupKey
from phalanx.core.model.result import ExpectedStart, GroupDecision
from phalanx.core.model.status import Reason, StatusCode
from phalanx.operator.compose import Timing
from phalanx.operator.events import EventRecorder
from phalanx.operator.upstream_status import released_status, upstream_report

NOW = 1_800_000_000.0


def decision(code: StatusCode, reason: Reason, message: str, placed: int = 0) -> GroupDecision:
    return GroupDecision(
        group=GroupKey("ml/pg"), admitted=True, scheduled=placed >= 4, placed=placed,
        code=code, reason=reason, message=message, placement=None, min_member=4,
        on_nodes=placed,
    )


PLACED = decision(StatusCode.SUCCESS, Reason.SCHEDULED, "placed in rack r1 on 4 node(s)", 4)
NO_FIT = decision(StatusCode.UNSCHEDULABLE, Reason.NO_DOMAIN_FITS, "needs 40 GPUs within one rack")


def group(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "ml", "uid": "u", "generation": 2},
        "status": {"conditions": list(conditions)},
    }


def scheduled_condition(report_status: dict[str, Any] | None) -> dict[str, Any]:
    assert report_status is not None
    [found] = [c for c in report_status["conditions"] if c["type"] == "PodGroupScheduled"]
    return dict(found)


def test_a_placed_gang_is_scheduled_true_with_an_event() -> None:
    report = upstream_report(group(), PLACED, NOW)
    said = scheduled_condition(report.status)
    assert (said["status"], said["reason"], said["observedGeneration"]) == ("True", "Scheduled", 2)
    assert [(e.type, e.reason) for e in report.events] == [("Normal", "Scheduled")]


def test_a_gang_that_does_not_fit_is_unschedulable_and_the_event_says_why() -> None:
    report = upstream_report(group(), NO_FIT, NOW)
    said = scheduled_condition(report.status)
    assert (said["status"], said["reason"]) == ("False", "Unschedulable")
    assert said["message"] == "needs 40 GPUs within one rack"
    assert [(e.type, e.reason) for e in report.events] == [("Warning", "NoDomainFits")]


def test_an_unreadable_group_is_a_scheduler_error() -> None:
    broken = decision(StatusCode.ERROR, Reason.INVALID_SPEC, "spec.schedulingPolicy: set one")
    assert scheduled_condition(upstream_report(group(), broken, NOW).status)["reason"] == (
        "SchedulerError"
    )


def test_nothing_is_said_while_pods_are_still_being_created() -> None:
    waiting = decision(StatusCode.UNSCHEDULABLE, Reason.GANG_INCOMPLETE, "2 of 4 pods exist")
    assert upstream_report(group(), waiting, NOW).status is None


def test_scheduled_is_never_set_back_to_false() -> None:
    before = scheduled_condition(upstream_report(group(), PLACED, NOW).status)
    assert upstream_report(group(before), NO_FIT, NOW + 60).status is None


def test_an_unchanged_condition_is_not_written_again_and_others_are_kept() -> None:
    disruption = {"type": "DisruptionTarget", "status": "False", "reason": "x", "message": ""}
    first = scheduled_condition(upstream_report(group(disruption), NO_FIT, NOW).status)
    assert upstream_report(group(disruption, first), NO_FIT, NOW + 60).status is None
    later = decision(StatusCode.UNSCHEDULABLE, Reason.NO_DOMAIN_FITS, "needs 48 GPUs")
    report = upstream_report(group(disruption, first), later, NOW + 60)
    assert report.status is not None and report.status["conditions"][0] == disruption
    assert scheduled_condition(report.status)["lastTransitionTime"] == first["lastTransitionTime"]


def test_a_released_gang_is_no_longer_scheduled_though_it_was() -> None:
    was = scheduled_condition(upstream_report(group(), PLACED, NOW).status)
    status = released_status(group(was), "2 of 4 pods were placed; deleted them", NOW + 60)
    said = scheduled_condition(status)
    assert (said["status"], said["reason"]) == ("False", "Unschedulable")
    assert said["message"] == "2 of 4 pods were placed; deleted them"
    assert said["lastTransitionTime"] != was["lastTransitionTime"]
    assert released_status(group(said), said["message"], NOW + 61) is None  # said already


async def test_numbers_alone_rewrite_the_condition_not_the_warning() -> None:
    api = FakeApi()
    recorder = EventRecorder(api)
    body, said = group(), []
    messages = ("needs 40 GPUs within one rack; 38 free", "needs 40 GPUs within one rack; 36 free")
    for message in messages:
        report = upstream_report(body, decision(StatusCode.UNSCHEDULABLE,
                                                Reason.NO_DOMAIN_FITS, message), NOW)
        assert report.status is not None  # the condition follows the numbers
        said.append(scheduled_condition(report.status)["message"])
        body = {**body, "status": report.status}
        for event in report.events:
            await recorder.post(event, NOW)
    assert said == list(messages)
    assert recorder.posted == 1
    other = decision(StatusCode.UNSCHEDULABLE, Reason.QUEUE_CAPABILITY, "queue full")
    for event in upstream_report(body, other, NOW).events:  # a new reason is news
        await recorder.post(event, NOW)
    assert recorder.posted == 2


# -- time (#31): what a Phalanx PodGroup says, as conditions --------------------------------

LIMIT = "ran past its runtime limit of 3600s (started at 00:00 UTC)"


def kinds(status: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    assert status is not None
    return {c["type"]: c for c in status["conditions"]}


def estimate(at: float | None, *waits: str) -> Timing:
    message = ("expected to start by 08:00 UTC, when 1 gang reaches its limit" if at is not None
               else "start unknown: it needs room held by work with no runtime limit")
    found = ExpectedStart(GroupKey("ml/pg"), at, tuple(GroupKey(w) for w in waits), message)
    return Timing(estimated=True, expected=found)


def test_a_gang_evicted_for_its_limit_gets_the_condition_and_keeps_it() -> None:
    scheduled = scheduled_condition(upstream_report(group(), PLACED, NOW).status)
    report = upstream_report(group(scheduled), PLACED, NOW + 60, Timing(over_limit=LIMIT))
    said = kinds(report.status)["RuntimeLimitExceeded"]
    assert (said["status"], said["reason"], said["message"]) == (
        "True", "RuntimeLimitExceeded", LIMIT)
    assert said["observedGeneration"] == 2
    assert report.events == ()  # the eviction's own Event says it (eviction_writes.py)
    later = upstream_report(group(scheduled, said), NO_FIT, NOW + 120)
    assert later.status is None or kinds(later.status)["RuntimeLimitExceeded"] == said


def test_a_waiting_gang_shows_its_expected_start_with_the_time_and_whom_it_waits_for() -> None:
    at = NOW  # 2027-01-15T08:00:00Z
    report = upstream_report(group(), NO_FIT, NOW, estimate(at, "ml/big", "ml/other"))
    said = kinds(report.status)["ExpectedStart"]
    assert (said["status"], said["reason"]) == ("True", "Estimated")
    assert said["message"] == ("expected to start by 08:00 UTC, when 1 gang reaches its limit "
                               "(at 2027-01-15T08:00:00Z); waits for ml/big, ml/other")
    # the same estimate again writes nothing; the scheduling Event is not repeated for it
    shown = group(*report.status["conditions"])  # type: ignore[index]
    assert upstream_report(shown, NO_FIT, NOW + 1, estimate(at, "ml/big", "ml/other")).status \
        is None
    moved = upstream_report(shown, NO_FIT, NOW + 2, estimate(at + 60, "ml/big"))
    assert kinds(moved.status)["ExpectedStart"]["lastTransitionTime"] == said[
        "lastTransitionTime"]  # still True: the same transition
    assert moved.events == ()


def test_an_estimate_names_a_few_groups_and_counts_the_rest() -> None:
    waits = [f"ml/g{i}" for i in range(11)]
    report = upstream_report(group(), NO_FIT, NOW, estimate(NOW + 60, *waits))
    assert kinds(report.status)["ExpectedStart"]["message"].endswith(
        "waits for ml/g0, ml/g1, ml/g2, ml/g3, ml/g4, ml/g5, ml/g6, ml/g7 and 3 more")


def test_no_estimate_is_unknown_never_a_made_up_time() -> None:
    report = upstream_report(group(), NO_FIT, NOW, estimate(None))
    said = kinds(report.status)["ExpectedStart"]
    assert (said["status"], said["reason"]) == ("Unknown", "StartUnknown")
    assert said["message"] == "start unknown: it needs room held by work with no runtime limit"


def test_the_expected_start_goes_once_scheduled_and_stays_between_estimates() -> None:
    waiting = upstream_report(group(), NO_FIT, NOW, estimate(NOW + 60))
    shown = group(*kinds(waiting.status).values())
    assert upstream_report(shown, NO_FIT, NOW + 1).status is None  # no estimate this cycle
    placed = upstream_report(shown, PLACED, NOW + 2)
    assert "ExpectedStart" not in kinds(placed.status)
    assert kinds(placed.status)["PodGroupScheduled"]["status"] == "True"


def test_other_writers_conditions_are_kept() -> None:
    theirs = {"type": "DisruptionTarget", "status": "False", "reason": "None", "message": "",
              "lastTransitionTime": "2027-01-01T00:00:00Z"}
    report = upstream_report(group(theirs), NO_FIT, NOW, estimate(NOW + 60))
    assert kinds(report.status)["DisruptionTarget"] == theirs
