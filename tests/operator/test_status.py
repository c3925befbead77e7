"""PodGroup and Queue status as users read it (`kubectl get pg`, `describe pg`)."""

from __future__ import annotations

import pytest
from operator_fakes import podgroup

from phalanx.core.model.backoff import Backoff
from phalanx.core.model.result import GroupDecision, Placement, PodCounts
from phalanx.core.model.status import Reason, StatusCode
from phalanx.operator.compose import differs, group_phase, podgroup_status, queue_status

TWO_PENDING = PodCounts(pending=2)


def decision(scheduled: bool = False, admitted: bool = True, code: StatusCode = StatusCode.SUCCESS,
             reason: Reason = Reason.SCHEDULED, message: str = "",
             placement: Placement | None = None, counts: PodCounts = TWO_PENDING,
             on_nodes: int | None = None, min_member: int = 2,
             backoff: Backoff | None = None) -> GroupDecision:
    """What the core says about group ns/g after a cycle (its pods by phase in `counts`)."""
    placed = 2 if scheduled else 0
    return GroupDecision("ns/g", admitted, scheduled, placed, code, reason, message, placement,
                         min_member=min_member, counts=counts,
                         on_nodes=placed if on_nodes is None else on_nodes, backoff=backoff)


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
    status = podgroup_status(group, decision(
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
    status = podgroup_status(podgroup(), decision(
        scheduled=True, placement=placement, counts=PodCounts(running=2)), 5.0)
    assert status["phase"] == "Running"
    assert status["placement"]["nodes"] == ["n1", "n2"]
    assert status["placement"]["domains"] == [{"level": "rack", "name": "b1/r2"}]
    assert status["placement"]["summary"] == "rack r2, 2 nodes (+1 level)"
    scheduled = next(c for c in status["conditions"] if c["type"] == "Scheduled")
    assert scheduled["status"] == "True" and "climbed 1 level" in scheduled["message"]


def test_timeout_is_reported_as_its_own_reason():
    status = podgroup_status(podgroup(), decision(
        code=StatusCode.UNSCHEDULABLE, reason=Reason.TIMEOUT,
        message="not placed within scheduleTimeoutSeconds: no rack",
        counts=PodCounts(pending=1), backoff=Backoff(5, 15)), now=10.0)
    unschedulable = next(c for c in status["conditions"] if c["type"] == "Unschedulable")
    assert unschedulable["reason"] == "Timeout"
    assert "no rack" in unschedulable["message"]


def test_an_unchanged_group_needs_no_write():
    group = podgroup()
    first = podgroup_status(group, decision(admitted=False), now=100.0)
    group["status"] = first
    again = podgroup_status(group, decision(admitted=False), now=500.0)
    assert not differs(again, group["status"])
    assert again["conditions"][0]["lastTransitionTime"] == first["conditions"][0][
        "lastTransitionTime"]


def test_a_transition_is_a_change():
    group = podgroup()
    group["status"] = podgroup_status(group, decision(admitted=False), now=100.0)
    later = podgroup_status(group, decision(admitted=True), now=200.0)
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
    group = podgroup(min_member=2)
    done = PodCounts(succeeded=2) if final == "Completed" else PodCounts(succeeded=1, failed=1)
    finished = decision(code=StatusCode.SUCCESS, reason=Reason.FINISHED,
                        message="all pods finished", counts=done, on_nodes=2, admitted=False)
    group["status"] = podgroup_status(group, finished, now=100.0)
    assert group["status"]["phase"] == final
    gone = decision(code=StatusCode.UNSCHEDULABLE, reason=Reason.GANG_INCOMPLETE,
                    message="0 of 2 pods exist", admitted=False, counts=PodCounts())
    later = podgroup_status(group, gone, now=200.0)
    conditions = {c["type"]: c for c in later["conditions"]}
    assert later["phase"] == final
    assert conditions["Unschedulable"]["status"] == "False"
    before = {c["type"]: c for c in group["status"]["conditions"]}
    assert conditions["Scheduled"] == before["Scheduled"]
    assert conditions["Admitted"] == before["Admitted"]
    assert conditions["Unschedulable"] == before["Unschedulable"]  # no Warning to announce


def test_a_new_pod_after_completion_is_scheduled_again():
    group = podgroup(min_member=1, status={"phase": "Completed"})
    status = podgroup_status(group, decision(admitted=True, min_member=1,
                                             counts=PodCounts(pending=1)), now=5.0)
    assert status["phase"] == "Inqueue"
