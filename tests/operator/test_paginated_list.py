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


async def test_a_streamed_list_ends_with_the_objects_a_list_gives(
    cluster: LocalCluster, namespace: str, kubectl, api_client
) -> None:
    """Kubernetes 1.34+ streams lists (WatchList): the watcher's store, taken from the
    stream's initial events, holds what a LIST holds, and it asked for no LIST."""
    import asyncio
    import contextlib

    from phalanx.operator.kube.raw_watch import RawWatch

    for i in range(3):
        kubectl("create", "configmap", f"stream-{i}", "-n", namespace, f"--from-literal=i={i}")
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    listed = await ApiListWatch(api_client, path=path).list()

    class NoList(ApiListWatch):
        async def list(self, on_page=None):  # type: ignore[no-untyped-def]
            raise AssertionError("listed, not streamed")

    watch = RawWatch(NoList(api_client, path=path), lambda: None, kind="ConfigMap",
                     streaming=True)
    task = asyncio.create_task(watch.run())
    try:
        await asyncio.wait_for(watch.listed.wait(), timeout=30)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    streamed = sorted(bodies[0]["metadata"]["name"] for bodies in watch.store.values())
    assert streamed == sorted(item["metadata"]["name"] for item in listed["items"])
    assert {f"stream-{i}" for i in range(3)} <= set(streamed)
    assert int(watch.resource_version) > 0
