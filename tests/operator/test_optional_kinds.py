"""The optional kinds: found by discovery, their watches read as one store."""

from __future__ import annotations

import asyncio
from typing import Any

from operator_fakes import FakeApi

from manual_clock import ManualClock
from phalanx.operator.cache import ClusterCache, Kind, MergedStore, kind_of_body
from phalanx.operator.kube.client import Reply
from phalanx.operator.kube.discovery import serves
from phalanx.operator.main import OPTIONAL_KINDS
from phalanx.operator.optional_kinds import OptionalKind, OptionalKinds


class DiscoveryApi(FakeApi):
    def __init__(self, served: dict[str, list[str]]) -> None:
        super().__init__()
        self.served = served

    async def request(self, method: str, path: str, body: Any = None,
                      content_type: str = "application/json") -> Reply:
        group_version = path.removeprefix("/apis/")
        if group_version not in self.served:
            return Reply(404, {"reason": "NotFound"})
        return Reply(200, {"resources": [{"name": r} for r in self.served[group_version]]})


async def test_a_kind_is_watched_only_when_the_api_server_serves_it() -> None:
    api = DiscoveryApi({"jobset.x-k8s.io/v1alpha2": ["jobsets", "jobsets/status"]})
    assert await serves(api, "jobset.x-k8s.io/v1alpha2", "jobsets")
    assert not await serves(api, "jobset.x-k8s.io/v1alpha2", "replicatedjobs")
    assert not await serves(api, "scheduling.k8s.io/v1alpha2", "podgroups")


async def test_a_kind_installed_after_start_is_watched_at_the_next_discovery() -> None:
    served = {"batch/v1": ["jobs"]}
    clock = ManualClock()
    started: list[OptionalKind] = []
    kinds = OptionalKinds(DiscoveryApi(served), OPTIONAL_KINDS, started.append, 30.0, clock)
    await kinds.discover()
    assert [k.kind for k in started] == ["Job"]
    task = asyncio.create_task(kinds.run())
    try:
        served["jobset.x-k8s.io/v1alpha2"] = ["jobsets"]  # the JobSet CRD is installed
        await clock.advance(29.0)
        assert [k.kind for k in started] == ["Job"]
        await clock.advance(1.0)
        assert [k.kind for k in started] == ["Job", "JobSet"]
        served["scheduling.k8s.io/v1alpha2"] = ["podgroups"]  # the Workload API turned on
        await clock.advance(90.0)
        assert [k.kind for k in started] == ["Job", "JobSet", "PodGroup"]  # each once
    finally:
        task.cancel()


def body(kind: str, name: str, api_version: str = "batch/v1") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": "ns"}}  # fmt: skip


def test_workloads_of_one_name_and_different_kinds_stay_apart() -> None:
    jobs = {"ns/train": (body("Job", "train"),)}
    jobsets = {"ns/train": (body("JobSet", "train", "jobset.x-k8s.io/v1alpha2"),)}
    store = MergedStore([jobs])
    store.stores.append(jobsets)  # a watch added after discovery
    cache = ClusterCache({Kind.WORKLOAD: store})
    assert sorted(w["kind"] for w in cache.objects(Kind.WORKLOAD)) == ["Job", "JobSet"]
    assert len(store) == 2


def test_kubernetes_podgroups_and_phalanx_podgroups_are_different_kinds() -> None:
    upstream = body("PodGroup", "pg", "scheduling.k8s.io/v1alpha2")
    ours = body("PodGroup", "pg", "scheduling.phalanx.io/v1alpha1")
    assert kind_of_body(upstream) is Kind.UPSTREAM_POD_GROUP
    assert kind_of_body(ours) is Kind.POD_GROUP
    assert kind_of_body(body("LeaderWorkerSet", "x")) is Kind.WORKLOAD


async def test_kubernetes_podgroups_are_watched_in_the_newest_version_served_only() -> None:
    """1.37 serves v1beta1 (and v1alpha3), 1.36 v1alpha2: the same objects in each served
    version, so one watch, in the preferred version; discovery then stops asking."""
    for served, wanted in (
        ({"scheduling.k8s.io/v1beta1": ["podgroups"], "scheduling.k8s.io/v1alpha2": ["podgroups"]},
         "scheduling.k8s.io/v1beta1"),
        ({"scheduling.k8s.io/v1alpha2": ["podgroups"]}, "scheduling.k8s.io/v1alpha2"),
    ):
        started: list[OptionalKind] = []
        kinds = OptionalKinds(DiscoveryApi(served), OPTIONAL_KINDS, started.append, 30.0,
                              ManualClock())
        await kinds.discover()
        await kinds.discover()
        assert [k.group_version for k in started if k.kind == "PodGroup"] == [wanted]
