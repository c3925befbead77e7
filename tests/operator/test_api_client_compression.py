"""The operator's LISTs ask for uncompressed replies unless the settings allow gzip
(kube/client.py `api_client`): kube-apiserver gzips every reply over 128 KiB that may be,
a page of 1,000 pods among them, at a CPU cost to both sides."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator

import orjson
import pytest
from aiohttp import web
from kubernetes_asyncio import client as k8s
from operator_fakes import serve_get

from phalanx.config import Settings
from phalanx.operator.kube.client import api_client
from phalanx.operator.kube.raw_watch import ApiListWatch

PODS = 400  # about 150 KiB: over the API server's 128 KiB threshold for compressing


def page() -> bytes:
    items = [{"metadata": {"name": f"p{i}", "namespace": "ns", "resourceVersion": str(i),
                           "annotations": {"note": "x" * 300}}} for i in range(PODS)]
    return orjson.dumps({"metadata": {"resourceVersion": "7"}, "items": items})


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, list[str]]]:
    """An API server's pod LIST that gzips its reply when asked, as kube-apiserver does;
    yields its address and the Accept-Encoding of each request."""
    asked: list[str] = []

    async def pods(request: web.Request) -> web.Response:
        encoding = request.headers.get("Accept-Encoding", "")
        asked.append(encoding)
        body = page()
        if "gzip" in encoding:
            return web.Response(body=gzip.compress(body, 1), content_type="application/json",
                                headers={"Content-Encoding": "gzip"})
        return web.Response(body=body, content_type="application/json")

    address, runner = await serve_get("/api/v1/pods", pods)
    try:
        yield address, asked
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(("compression", "expected"), [(False, "identity"), (True, "gzip")])
async def test_a_list_asks_for_gzip_only_when_the_settings_allow_it(
        server: tuple[str, list[str]], compression: bool, expected: str) -> None:
    address, asked = server
    client = api_client(k8s.Configuration(host=address), compression)
    try:
        listed = await ApiListWatch(client).list()
    finally:
        await client.close()
    assert len(listed["items"]) == PODS  # read whole either way
    assert len(asked) == 1 and expected in asked[0]
    if not compression:
        assert "gzip" not in asked[0]


def test_compression_is_off_unless_configured() -> None:
    assert Settings().api_compression is False
