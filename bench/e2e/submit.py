"""Create a workload's objects fast: `concurrency` POSTs in flight, wave after wave.

Per gang it records when its first object was sent (a gang's latency counts from it); the
last creation of all is `Submission.finished`. The PodGroup (if any) is created before the
gang's pods, and the gangs' objects are sent in gang order (see `submit`).
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from bench.e2e.measure import Endpoint

RETRIES = 5


@dataclass(frozen=True)
class Submission:
    started: float
    finished: float
    requests: int
    retries: int
    first_sent: dict[str, float]  # by gang


GangObjects = Callable[[Any], Sequence[dict[str, Any]]]


async def submit(endpoint: Endpoint, waves: Sequence[Sequence[Any]], objects: GangObjects,
                 concurrency: int, progress: Callable[[int], None] | None = None) -> Submission:
    """Create every gang's objects (`objects(gang)`: group first, then pods) as one stream
    in gang order, `concurrency` requests in flight, so each gang's objects are sent close
    together, as a job controller or a user sends a job. A gang's pods wait for its group
    to be created. (Before, every gang of a wave started at once: the FIFO of requests then
    held all the wave's PodGroups ahead of all its pods, a gang's first object was sent
    minutes before its pods, and that wait counted in the gang latency of contenders whose
    gangs have a group object but not of plain kube-scheduler, whose first object is a pod.)"""
    context = ssl.create_default_context(cafile=endpoint.ca_cert)
    connector = aiohttp.TCPConnector(limit=concurrency, ssl=context)
    headers = {"Authorization": f"Bearer {endpoint.token}", "Content-Type": "application/json"}
    counts = {"requests": 0, "retries": 0}
    stream = _stream(waves, objects)
    first_sent: dict[str, float] = {}

    async with aiohttp.ClientSession(endpoint.server, connector=connector,
                                     headers=headers) as session:

        async def create(body: dict[str, Any]) -> None:
            path = _collection(body)
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

        async def worker() -> None:
            while stream.items:
                item = stream.items.popleft()
                gang = stream.gangs[item.gang]
                if item.first:
                    gang.first_sent = time.time()
                else:
                    await gang.first_created.wait()
                await create(item.body)
                if item.first:
                    gang.first_created.set()
                gang.left -= 1
                if gang.left == 0:
                    first_sent[item.gang] = gang.first_sent
                    if progress is not None:
                        progress(len(first_sent))

        started = time.time()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        finished = time.time()
    return Submission(started, finished, counts["requests"], counts["retries"], first_sent)


@dataclass
class _GangProgress:
    left: int
    first_created: asyncio.Event
    first_sent: float = 0.0


@dataclass(frozen=True)
class _Item:
    gang: str
    body: dict[str, Any]
    first: bool


@dataclass
class _Stream:
    items: collections.deque[_Item]
    gangs: dict[str, _GangProgress]


def _stream(waves: Sequence[Sequence[Any]], objects: GangObjects) -> _Stream:
    """Every object to create, gang after gang, wave after wave."""
    items: collections.deque[_Item] = collections.deque()
    gangs: dict[str, _GangProgress] = {}
    for wave in waves:
        for gang in wave:
            bodies = objects(gang)
            gangs[gang.name] = _GangProgress(len(bodies), asyncio.Event())
            items.extend(_Item(gang.name, body, i == 0) for i, body in enumerate(bodies))
    return _Stream(items, gangs)


def _collection(body: dict[str, Any]) -> str:
    namespace = body["metadata"]["namespace"]
    if body["kind"] == "Pod":
        return f"/api/v1/namespaces/{namespace}/pods"
    group_version = body["apiVersion"]
    plural = body["kind"].lower() + "s"
    return f"/apis/{group_version}/namespaces/{namespace}/{plural}"
