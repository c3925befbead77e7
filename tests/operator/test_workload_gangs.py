"""The operator keeps a queue-labelled workload's PodGroups, and counts one being created
already, so the workload's first pods never start one by one."""

from __future__ import annotations

from typing import Any

from operator_fakes import QUEUE, TOPOLOGY, FakeApi, node, podgroup, settled_cycle

from phalanx.config import Settings
from phalanx.operator.cache import ClusterCache
from phalanx.operator.scheduler import Scheduler
from phalanx.workloads import pod_groups_for

APPLY = "/apis/scheduling.phalanx.io/v1alpha1/namespaces/ns/podgroups/job-train"


def job(parallelism: int = 2, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "ns", "uid": "job-uid",
                     "labels": {"scheduling.phalanx.io/queue": "default", **labels}},
        "spec": {"parallelism": parallelism, "template": {"spec": {"containers": []}}},
    }  # fmt: skip


def job_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                     "labels": {"batch.kubernetes.io/job-name": "train"}},
        "spec": {"schedulerName": "phalanx", "containers": [
            {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]},
        "status": {"phase": "Pending"},
    }  # fmt: skip


def scheduler(*objects: dict[str, Any]) -> tuple[Scheduler, FakeApi]:
    everything = [node("n0", "r0"), node("n1", "r1"), TOPOLOGY, QUEUE, *objects]
    api = FakeApi()
    return Scheduler(ClusterCache.from_objects(everything), api, Settings(),
                     clock=lambda: 1000.0), api  # fmt: skip


def applied(api: FakeApi) -> list[Any]:
    return [body for method, path, body in api.calls
            if method == "PATCH" and path.startswith(APPLY + "?fieldManager=phalanx")]  # fmt: skip


async def test_a_queue_labelled_job_gets_its_podgroup_applied() -> None:
    test, api = scheduler(job())
    await settled_cycle(test)
    [body] = applied(api)
    assert body == pod_groups_for(job())[0]


async def test_the_first_pod_of_a_gang_waits_for_the_rest_while_its_podgroup_is_created() -> None:
    test, _ = scheduler(job(), job_pod("train-a"))
    result = await settled_cycle(test)
    assert result.bindings == ()  # 1 of 2: not placed on its own
    test, api = scheduler(job(), job_pod("train-a"), job_pod("train-b"))
    result = await settled_cycle(test)
    assert len(result.bindings) == 2
    events = [body["reason"] for method, path, body in api.calls if path.endswith("/events")]
    assert "GroupDeleted" not in events  # being created is not deleted


async def test_an_applied_podgroup_is_not_applied_again() -> None:
    stored = pod_groups_for(job())[0]
    test, api = scheduler(job(), {**stored, "status": {}})
    await settled_cycle(test)
    assert applied(api) == []


async def test_a_podgroup_name_someone_else_holds_is_left_alone_and_the_job_says_so() -> None:
    test, api = scheduler(job(), podgroup("job-train", min_member=1))
    await settled_cycle(test)
    assert applied(api) == []
    events = [body for method, path, body in api.calls if path.endswith("/events")]
    on_job = [e["reason"] for e in events if e["involvedObject"]["kind"] == "Job"]
    assert on_job == ["PodGroupTaken"]


async def test_a_workload_it_cannot_read_gets_a_warning_naming_the_field() -> None:
    broken = job()
    broken["metadata"]["annotations"] = {"scheduling.phalanx.io/topology-subgroup-size": "x"}
    test, api = scheduler(broken)
    await settled_cycle(test)
    [event] = [body for method, path, body in api.calls if path.endswith("/events")]
    assert event["reason"] == "InvalidGang"
    assert "scheduling.phalanx.io/topology-subgroup" in event["message"]


async def test_a_podgroup_being_created_is_as_old_as_its_workload() -> None:
    old = job()
    old["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    test, _ = scheduler(old)
    [pending] = test.workload_gangs.sync(test.cache)
    await test.settle()
    assert pending["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"
