"""The raw API client: a request that never got an answer is a failed reply, not a crash.

A binding that times out in the middle of a gang must come back as one failed pod, so the
writer still clears the plan and reports the gang, instead of aborting the whole cycle.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from operator_fakes import pod
from prometheus_client import CollectorRegistry

from phalanx.observe import Metrics
from phalanx.operator.assumed import AssumedPods
from phalanx.operator.binder import GangBinder
from phalanx.operator.kube.client import KubeApi


class Response:
    status = 201

    async def read(self) -> bytes:
        return b"{}"

    def release(self) -> None:
        pass


class FlakyClient:
    """Answers every request but those whose path contains `broken`, which raise `error`."""

    def __init__(self, broken: str, error: BaseException) -> None:
        self.broken, self.error = broken, error
        self.paths: list[str] = []

    async def call_api(self, path: str, method: str, **_: Any) -> Response:
        self.paths.append(path)
        if self.broken in path:
            raise self.error
        return Response()


@pytest.mark.parametrize("error", [
    TimeoutError(), aiohttp.ClientConnectionError("connection reset"),
    aiohttp.ServerDisconnectedError()])
async def test_a_transport_failure_is_a_failed_reply(error: BaseException) -> None:
    metrics = Metrics(CollectorRegistry())
    api = KubeApi(FlakyClient("/pods/", error), metrics)  # type: ignore[arg-type]
    reply = await api.request("POST", "/api/v1/namespaces/ns/pods/p/binding", {})
    assert reply.status == 0 and not reply.ok and reply.reason
    assert metrics.registry.get_sample_value(
        "phalanx_api_errors_total", {"verb": "post", "code": "0"}) == 1


async def test_a_binding_that_times_out_fails_only_its_pod() -> None:
    client = FlakyClient("/pods/p1/binding", TimeoutError())
    api = KubeApi(client)  # type: ignore[arg-type]
    assignments = {f"ns/p{i}": f"n{i}" for i in range(4)}
    pods = {key: pod(key.split("/")[1]) for key in assignments}
    outcome = await GangBinder(api, AssumedPods(60), 4).place_gang("ns/g", assignments, pods)
    assert set(outcome.failed) == {"ns/p1"} and len(outcome.placed) == 3
    assert outcome.failed["ns/p1"].startswith("0 ")
    assert len(client.paths) == 4  # the others were bound regardless
