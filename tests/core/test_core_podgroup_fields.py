"""Kubernetes 1.37's PodGroup fields, each with the meaning the API gives it: the group's
own priority and preemptionPolicy win over its PriorityClass, disruptionMode Single lets a
running group lose one pod (to preemption, or to a failed node, replaced alone), All only
all together (a lost pod sends the whole group back to be placed whole). A field Phalanx
does not act on is named, never dropped unseen."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from core_builders import decision, group, node, pod, snapshot_of
from test_core_preemption import run, running_gang, waiting_gang

from phalanx.core import InvalidObject, SchedulerConfig, run_cycle
from phalanx.core.model.inputs import DISRUPT_ALL, DISRUPT_SINGLE, PREEMPT_NEVER, GroupInfo
from phalanx.core.model.names import GroupKey
from phalanx.core.parse import parse_pod_group


def v1beta1(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "ml"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec}}


def test_priority_preemption_policy_and_disruption_mode_are_read_in_both_versions() -> None:
    group = parse_pod_group(v1beta1(priority=7, preemptionPolicy="Never",
                                    disruptionMode={"all": {}}, workloadRef={"workloadName": "w"}))
    assert (group.priority, group.preemption_policy, group.disruption) == (
        7, PREEMPT_NEVER, DISRUPT_ALL)
    assert parse_pod_group(v1beta1(disruptionMode={"single": {}})).disruption == DISRUPT_SINGLE
    old = {**v1beta1(disruptionMode="PodGroup"), "apiVersion": "scheduling.k8s.io/v1alpha2"}
    assert parse_pod_group(old).disruption == DISRUPT_ALL
    assert parse_pod_group(v1beta1()).disruption is None
    scheduled = {**v1beta1(), "status": {"conditions": [
        {"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled"}]}}
    assert parse_pod_group(scheduled).ran_whole and not parse_pod_group(v1beta1()).ran_whole


@pytest.mark.parametrize(("spec", "words"), [
    ({"resourceClaims": [{"name": "gpus"}]},
     "set exactly one of resourceClaimName and resourceClaimTemplateName"),
    ({"futureField": 1}, "spec.futureField: Phalanx does not know this field"),
    ({"preemptionPolicy": "Sometimes"}, "expected Never or PreemptLowerPriority"),
    ({"disruptionMode": {"some": {}}}, "spec.disruptionMode: expected single or all"),
])
def test_a_field_phalanx_does_not_act_on_is_named(spec: dict[str, Any], words: str) -> None:
    with pytest.raises(InvalidObject, match=words.replace("(", r"\(")):
        parse_pod_group(v1beta1(**spec))


def test_a_groups_own_priority_wins_over_its_priority_class() -> None:
    """`low` names the class of priority 0, yet the group says 1000: it preempts."""
    raised = waiting_gang("high", 1, priority="low")
    raised[-1] = replace(raised[-1], priority=1000)  # type: ignore[type-var]
    result = run([node("n0")], running_gang("low", ["n0"]), raised)
    assert {e.pod for e in result.evictions} == {"default/low-0"}
    lowered = waiting_gang("high", 1, priority="high")
    lowered[-1] = replace(lowered[-1], priority=0)  # type: ignore[type-var]
    assert run([node("n0")], running_gang("low", ["n0"]), lowered).evictions == ()


def test_a_groups_own_preemption_policy_never_preempts_nothing() -> None:
    polite = waiting_gang("high", 1, preemption_policy=PREEMPT_NEVER)  # class high: preempts
    result = run([node("n0")], running_gang("low", ["n0"]), polite)
    assert result.evictions == ()
    assert "preemptionPolicy Never" in decision(result, "default/high").message


def test_disruption_mode_single_gives_up_one_pod_where_a_gang_gives_up_all() -> None:
    def victims(disruption: str | None) -> set[str]:
        running = running_gang("low", ["n0", "n1"])
        running[-1] = replace(running[-1], disruption=disruption)  # type: ignore[type-var]
        return {str(e.pod) for e in run([node("n0"), node("n1")], running,
                                        waiting_gang("high", 1)).evictions}

    assert len(victims(DISRUPT_SINGLE)) == 1
    assert victims(None) == {"default/low-0", "default/low-1"}


KEY = GroupKey("default/g")


def lost_one(disruption: str) -> list[object]:
    """A group of two that ran whole (its condition said so) and lost one pod to a failed node:
    one pod still runs on n0, its replacement waits, and n1 has room for it."""
    return [node("n0"), node("n1"),
            pod("g-0", gpus=8, group="g", node_name="n0", controlled=True),
            pod("g-1b", gpus=8, group="g", controlled=True),
            group("g", 2, ran_whole=True, disruption=disruption)]  # fmt: skip


def test_single_replaces_the_lost_pod_alone_and_never_releases_the_rest() -> None:
    config = SchedulerConfig(partial_grace_seconds=1)
    result = run_cycle(snapshot_of(lost_one(DISRUPT_SINGLE)), config, 100.0)
    assert [(str(b.pod), str(b.node)) for b in result.bindings] == [("default/g-1b", "n1")]
    short = [*lost_one(DISRUPT_SINGLE)[:2], lost_one(DISRUPT_SINGLE)[2],
             pod("g-1b", gpus=16, group="g", controlled=True), lost_one(DISRUPT_SINGLE)[4]]
    later = run_cycle(replace(snapshot_of(short), partial_since={KEY: 0.0}), config, 100.0)
    assert later.releases == ()  # fits nowhere, past every deadline: the rest keeps running


def test_all_sends_the_whole_group_back_instead_of_replacing_one_pod() -> None:
    result = run_cycle(snapshot_of(lost_one(DISRUPT_ALL)), SchedulerConfig(), 100.0)
    assert result.bindings == ()  # no replacement placed alone
    [release] = result.releases
    assert release.pods == ("default/g-0",) and "disruptionMode is All" in release.message


def test_a_group_that_never_ran_whole_is_not_released_by_its_disruption_mode() -> None:
    waiting: list[Any] = lost_one(DISRUPT_ALL)
    waiting[-1] = replace(waiting[-1], ran_whole=False)
    result = run_cycle(snapshot_of(waiting), SchedulerConfig(), 100.0)
    assert result.releases == ()
    assert [str(b.pod) for b in result.bindings] == ["default/g-1b"]
    assert isinstance(waiting[-1], GroupInfo)
