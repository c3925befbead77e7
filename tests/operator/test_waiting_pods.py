"""Every pod that waits says why, as kube-scheduler's pods do (PodScheduled=False, reason
Unschedulable, a FailedScheduling Warning), lone pods included; a group's Warnings are not
repeated while only the numbers in its message change."""

from __future__ import annotations

from typing import Any

from operator_fakes import QUEUE, TOPOLOGY, FakeApi, node, pod, podgroup, settled_cycle
from test_scheduler import echo_writes

from phalanx.config import Settings
from phalanx.operator.cache import ClusterCache
from phalanx.operator.scheduler import Scheduler


def gpu_pod(name: str, gpus: int, **kw: Any) -> dict[str, Any]:
    body = pod(name, **kw)
    body["spec"]["containers"] = [
        {"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}]
    return body


def racks() -> list[dict[str, Any]]:
    return [node("n0", "r0"), node("n1", "r0"), node("n2", "r1"), node("n3", "r1"),
            TOPOLOGY, QUEUE]


def events(api: FakeApi, name: str) -> list[tuple[str, str, str]]:
    return [(b["type"], b["reason"], b["message"]) for m, p, b in api.calls
            if p.endswith("/events") and b["involvedObject"]["name"] == name]


def pod_conditions(api: FakeApi, name: str) -> list[dict[str, Any]]:
    return [b["status"]["conditions"][0] for m, p, b in api.calls
            if p.endswith(f"/pods/{name}/status")]


async def test_a_lone_pod_that_cannot_fit_says_why_once() -> None:
    objects = [*racks(), gpu_pod("huge", 1000, group=None)]
    api, clock = FakeApi(), [1000.0]
    scheduler = Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                          clock=lambda: clock[0])
    await settled_cycle(scheduler)
    (condition,) = pod_conditions(api, "huge")
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "PodScheduled", "False", "Unschedulable")
    assert condition["message"].startswith("InsufficientResources: needs 1 pod of ")
    assert "0/4 nodes are available: 4 Insufficient nvidia.com/gpu." in condition["message"]
    assert events(api, "huge") == [("Warning", "FailedScheduling", condition["message"])]
    for later in (1001.0, 1100.0):  # the pod shows it now: nothing more to say
        echo_writes(api, objects)
        api.calls.clear()
        clock[0] = later
        await settled_cycle(scheduler)
        assert pod_conditions(api, "huge") == [] and events(api, "huge") == []


async def test_numbers_alone_change_the_conditions_not_the_events() -> None:
    group = podgroup("big", min_member=3, topology={"required": "rack"})
    objects = [*racks(), group, *(gpu_pod(f"big-{i}", 8, group="big") for i in range(3))]
    api, clock = FakeApi(), [1000.0]
    scheduler = Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                          clock=lambda: clock[0])
    await settled_cycle(scheduler)
    (warning,) = [e for e in events(api, "big") if e[0] == "Warning"]
    assert warning[1] == "NoDomainFits"
    assert [e[1] for e in events(api, "big-0")] == ["FailedScheduling"]
    first = pod_conditions(api, "big-0")[0]["message"]
    assert first.startswith("PodGroup big (NoDomainFits): needs 24 GPUs (3 pods) within one rack")

    # Another pod takes half a node: the free-GPU numbers in the message change.
    echo_writes(api, objects)
    objects.append(gpu_pod("other", 4, group=None, node="n0", scheduler="default-scheduler"))
    scheduler.cache = ClusterCache.from_objects(objects)
    for later, refreshed in ((1001.0, False), (1040.0, True)):
        api.calls.clear()
        clock[0] = later
        await settled_cycle(scheduler)
        statuses = [b["status"] for m, p, b in api.calls if p.endswith("podgroups/big/status")]
        if later == 1001.0:  # the group's condition has the new numbers at once
            (status,) = statuses
            message = next(c["message"] for c in status["conditions"]
                           if c["type"] == "Unschedulable")
            assert message != warning[2] and message.startswith("needs 24 GPUs (3 pods)")
        assert [e for e in events(api, "big") if e[0] == "Warning"] == []  # same reason
        assert events(api, "big-0") == []
        conditions = pod_conditions(api, "big-0")
        # The pods' numbers follow, at most every POD_REFRESH_SECONDS.
        assert bool(conditions) is refreshed
        if refreshed:
            assert conditions[0]["message"] == f"PodGroup big (NoDomainFits): {message}"
        echo_writes(api, objects)


async def test_pods_of_a_kubernetes_podgroup_that_cannot_fit_say_why_too() -> None:
    """A gang of Kubernetes' own PodGroup (Workload API) waits like one of ours: each pod
    shows PodScheduled=False with the reason and gets one FailedScheduling Warning."""
    group = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
             "metadata": {"name": "up", "namespace": "ns", "uid": "uid-up", "generation": 1,
                          "creationTimestamp": "1970-01-01T00:00:00Z"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 5}}}}
    members = []
    for i in range(5):  # 40 GPUs on a 32-GPU cluster
        member = gpu_pod(f"up-{i}", 8, group=None)
        member["spec"]["schedulingGroup"] = {"podGroupName": "up"}
        members.append(member)
    objects = [*racks(), group, *members]
    api = FakeApi()
    scheduler = Scheduler(ClusterCache.from_objects(objects), api, Settings(),
                          clock=lambda: 1000.0)
    await settled_cycle(scheduler)
    for i in range(5):
        (condition,) = pod_conditions(api, f"up-{i}")
        assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
        assert condition["message"].startswith("PodGroup up (InsufficientResources): ")
        assert events(api, f"up-{i}") == [("Warning", "FailedScheduling", condition["message"])]
