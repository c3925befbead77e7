"""PodGroup and Queue status as users read it (`kubectl get pg`, `describe pg`)."""

from __future__ import annotations

import pytest
from operator_fakes import pod, podgroup

from phalanx.core.result import GroupDecision, Placement
from phalanx.core.status import Reason, StatusCode
from phalanx.operator.status import differs, group_phase, podgroup_status, queue_status


def decision(scheduled: bool = False, admitted: bool = True, code: StatusCode = StatusCode.SUCCESS,
             reason: Reason = Reason.SCHEDULED, message: str = "",
             placement: Placement | None = None) -> GroupDecision:
    return GroupDecision("ns/g", admitted, scheduled, 2 if scheduled else 0, code, reason,
                         message, placement)


@pytest.mark.parametrize(
    ("counts", "placed", "admitted", "previous", "phase"),
    [
        ({"pending": 2, "running": 0, "succeeded": 0, "failed": 0}, 0, True, "Running",
         "Unknown"),
        ({"pending": 2, "running": 0, "succeeded": 0, "failed": 0}, 0, False, None, "Pending"),
        ({"pending": 2, "running": 0, "succeeded": 0, "failed": 0}, 0, True, None, "Inqueue"),
        ({"pending": 2, "running": 0, "succeeded": 0, "failed": 0}, 2, True, None, "Inqueue"),
        ({"pending": 0, "running": 2, "succeeded": 0, "failed": 0}, 2, True, None, "Running"),
        ({"pending": 0, "running": 1, "succeeded": 1, "failed": 0}, 2, True, None, "Running"),
        ({"pending": 1, "running": 1, "succeeded": 0, "failed": 0}, 1, True, "Running", "Unknown"),
        ({"pending": 0, "running": 0, "succeeded": 2, "failed": 0}, 2, True, None, "Completed"),
        ({"pending": 0, "running": 0, "succeeded": 1, "failed": 1}, 2, True, "Running", "Failed"),
    ],
)
def test_phase_follows_the_pods(counts, placed, admitted, previous, phase):
    assert group_phase(counts, 2, placed, admitted, previous) == phase


def test_unschedulable_group_carries_the_core_reason_and_message():
    group = podgroup(min_member=2)
    status = podgroup_status(group, [pod("a"), pod("b")], decision(
        code=StatusCode.UNSCHEDULABLE, reason=Reason.NO_DOMAIN_FITS,
        message="needs 16 GPUs in one rack; the best rack has 8 free"), now=1000.0)
    conditions = {c["type"]: c for c in status["conditions"]}
    assert status["phase"] == "Pending"  # admitted, but it does not fit: not Inqueue
    assert conditions["Admitted"]["status"] == "True"
    assert conditions["Unschedulable"]["status"] == "True"
    assert conditions["Unschedulable"]["reason"] == "NoDomainFits"
    assert "best rack has 8 free" in conditions["Unschedulable"]["message"]
    assert conditions["Scheduled"]["status"] == "False"
    assert status["pending"] == 2


def test_placement_and_summary_are_shown_once_scheduled():
    placement = Placement("default", "rack", 1, (("rack", "b1/r2"),), ("n1", "n2"))
    pods = [pod("a", node="n1", phase="Running"), pod("b", node="n2", phase="Running")]
    status = podgroup_status(podgroup(), pods, decision(scheduled=True, placement=placement), 5.0)
    assert status["phase"] == "Running"
    assert status["placement"]["nodes"] == ["n1", "n2"]
    assert status["placement"]["domains"] == [{"level": "rack", "name": "b1/r2"}]
    assert status["placement"]["summary"] == "rack r2, 2 nodes (+1 level)"
    scheduled = next(c for c in status["conditions"] if c["type"] == "Scheduled")
    assert scheduled["status"] == "True" and "climbed 1 level" in scheduled["message"]


def test_timeout_is_reported_as_its_own_reason():
    status = podgroup_status(podgroup(), [pod("a")], decision(
        code=StatusCode.UNSCHEDULABLE, reason=Reason.NO_DOMAIN_FITS, message="no rack"),
        now=10.0, timed_out=True)
    unschedulable = next(c for c in status["conditions"] if c["type"] == "Unschedulable")
    assert unschedulable["reason"] == "Timeout"
    assert "no rack" in unschedulable["message"]


def test_an_unchanged_group_needs_no_write():
    group = podgroup()
    first = podgroup_status(group, [pod("a")], decision(admitted=False), now=100.0)
    group["status"] = first
    again = podgroup_status(group, [pod("a")], decision(admitted=False), now=500.0)
    assert not differs(again, group["status"])
    assert again["conditions"][0]["lastTransitionTime"] == first["conditions"][0][
        "lastTransitionTime"]


def test_a_transition_is_a_change():
    group = podgroup()
    group["status"] = podgroup_status(group, [pod("a")], decision(admitted=False), now=100.0)
    later = podgroup_status(group, [pod("a")], decision(admitted=True), now=200.0)
    assert differs(later, group["status"])


def test_queue_counts_groups_by_phase():
    phases = [("q", "Pending"), ("q", "Inqueue"), ("q", "Running"), ("q", "Unknown"),
              ("other", "Running"), ("q", "Completed")]
    status = queue_status("q", phases, {"nvidia.com/gpu": "16"})
    assert status == {"pending": 1, "inqueue": 1, "running": 2,
                      "allocated": {"nvidia.com/gpu": "16"}}


@pytest.mark.parametrize("final", ["Completed", "Failed"])
def test_a_finished_group_stays_finished_when_its_pods_are_cleaned_up(final):
    """Jobs' finished pods get deleted (ttlSecondsAfterFinished, users): the group must not
    fall back to Pending and complain that fewer pods exist than minMember."""
    phase = "Succeeded" if final == "Completed" else "Failed"
    group = podgroup(min_member=2)
    done = [pod("a", node="n1", phase="Succeeded"), pod("b", node="n1", phase=phase)]
    finished = decision(scheduled=True, code=StatusCode.SUCCESS, reason=Reason.FINISHED,
                        message="all pods finished")
    group["status"] = podgroup_status(group, done, finished, now=100.0)
    assert group["status"]["phase"] == final
    gone = decision(code=StatusCode.UNSCHEDULABLE, reason=Reason.GANG_INCOMPLETE,
                    message="0 of 2 pods exist", admitted=False)
    later = podgroup_status(group, [], gone, now=200.0)
    conditions = {c["type"]: c for c in later["conditions"]}
    assert later["phase"] == final
    assert conditions["Unschedulable"]["status"] == "False"
    before = {c["type"]: c for c in group["status"]["conditions"]}
    assert conditions["Scheduled"] == before["Scheduled"]
    assert conditions["Admitted"] == before["Admitted"]
    assert conditions["Unschedulable"] == before["Unschedulable"]  # no Warning to announce


def test_a_new_pod_after_completion_is_scheduled_again():
    group = podgroup(min_member=1, status={"phase": "Completed"})
    status = podgroup_status(group, [pod("again")], decision(admitted=True), now=5.0)
    assert status["phase"] == "Inqueue"
