"""The optional kinds: found by discovery, their watches read as one store."""

from __future__ import annotations

from typing import Any

from operator_fakes import FakeApi

from phalanx.operator.cache import ClusterCache, Kind, MergedStore, kind_of_body
from phalanx.operator.kube.client import Reply
from phalanx.operator.kube.discovery import serves


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
