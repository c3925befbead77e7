"""Create a workload's objects fast: `concurrency` POSTs in flight, wave after wave.

Per gang it records when its first object was sent and when its last creation was
acknowledged; the PodGroup (if any) is created before the gang's pods.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from bench.e2e_measure import Endpoint

RETRIES = 5


@dataclass(frozen=True)
class GangSubmission:
    first_sent: float
    last_created: float


@dataclass(frozen=True)
class Submission:
    started: float
    finished: float
    requests: int
    retries: int
    gangs: dict[str, GangSubmission]


GangObjects = Callable[[Any], Sequence[dict[str, Any]]]


async def submit(endpoint: Endpoint, waves: Sequence[Sequence[Any]], objects: GangObjects,
                 concurrency: int, progress: Callable[[int], None] | None = None) -> Submission:
    """Create every gang's objects (`objects(gang)`: group first, then pods)."""
    context = ssl.create_default_context(cafile=endpoint.ca_cert)
    connector = aiohttp.TCPConnector(limit=concurrency, ssl=context)
    headers = {"Authorization": f"Bearer {endpoint.token}", "Content-Type": "application/json"}
    slots = asyncio.Semaphore(concurrency)
    counts = {"requests": 0, "retries": 0}
    gangs: dict[str, GangSubmission] = {}

    async with aiohttp.ClientSession(endpoint.server, connector=connector,
                                     headers=headers) as session:

        async def create(body: dict[str, Any]) -> None:
            path = _collection(body)
            async with slots:
                for attempt in range(RETRIES + 1):
                    counts["requests"] += 1
                    async with session.post(path, json=body) as response:
                        if response.status in (201, 409):
                            return
                        text = await response.text()
                    if response.status not in (429, 500, 503, 504) or attempt == RETRIES:
                        raise RuntimeError(f"POST {path}: {response.status} {text[:300]}")
                    counts["retries"] += 1
                    await asyncio.sleep(0.2 * 2**attempt)

        async def gang(item: Any) -> None:
            first, *rest = objects(item)
            sent = time.time()
            await create(first)
            await asyncio.gather(*(create(body) for body in rest))
            gangs[item.name] = GangSubmission(sent, time.time())
            if progress is not None:
                progress(len(gangs))

        started = time.time()
        for wave in waves:
            await asyncio.gather(*(gang(item) for item in wave))
        finished = time.time()
    return Submission(started, finished, counts["requests"], counts["retries"], gangs)


def _collection(body: dict[str, Any]) -> str:
    namespace = body["metadata"]["namespace"]
    if body["kind"] == "Pod":
        return f"/api/v1/namespaces/{namespace}/pods"
    group_version = body["apiVersion"]
    plural = body["kind"].lower() + "s"
    return f"/apis/{group_version}/namespaces/{namespace}/{plural}"
