"""The watcher's LIST reads every object of a large kind in pages (real API server)."""

from __future__ import annotations

import pytest

from phalanx.cluster import LocalCluster
from phalanx.operator.kube.raw_watch import ApiListWatch

pytestmark = pytest.mark.e2e


async def test_a_list_in_pages_returns_every_object_and_a_version_to_watch_from(
    cluster: LocalCluster, namespace: str, kubectl, api_client
) -> None:
    for i in range(5):
        kubectl("create", "configmap", f"page-{i}", "-n", namespace, f"--from-literal=i={i}")
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    paged = await ApiListWatch(api_client, path=path, page_size=2).list()
    whole = await ApiListWatch(api_client, path=path, page_size=500).list()
    names = sorted(item["metadata"]["name"] for item in paged["items"])
    assert [n for n in names if n.startswith("page-")] == [f"page-{i}" for i in range(5)]
    assert names == sorted(item["metadata"]["name"] for item in whole["items"])
    assert int(paged["metadata"]["resourceVersion"]) > 0
