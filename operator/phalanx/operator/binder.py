"""The gang binder: a gang's pods bound (or un-gated) together, plan first.

Per gang: 1. every pod is assumed on its node. 2. Bindings (binder mode) or
pin-and-ungate patches (gate mode) go out as one burst: the gang takes a slot per pod
(up to the bound on requests in flight, shared by all gangs in turn; a large gang's
burst goes alone, see slots.py), so its pods land together. The first request sent
carries the plan (pod -> node, see plans.py) as an annotation. 3. Failed pods are
un-assumed.

A failed write (node gone, pod deleted, conflict) cannot undo the others: a binding is
final. Those pods stay bound and count as placed members; the next cycles place the
missing ones (all at once), and the core (core/admission/partial.py) releases a partial gang whose
pods have a controller if it stays partial past its deadline.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import math
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from phalanx.core.model.names import GPU_INDEX_ANNOTATION, PLAN_ANNOTATION
from phalanx.operator.assumed import AssumedPods
from phalanx.operator.assumed_claims import AssumedClaims
from phalanx.operator.cache import Body
from phalanx.operator.claim_writes import GangClaims, write_claims
from phalanx.operator.gates import ungate_patch
from phalanx.operator.in_flight_limit import InFlightLimit
from phalanx.operator.kube.client import MERGE_PATCH, Api, Reply, pod_path
from phalanx.operator.pods import is_gated
from phalanx.operator.slots import Burst, GangSlots

# While the binder is saturated, a status write or an Event waits for the bindings decided
# before it, not for a fixed time. Released after a fixed 10 s, then 30 s, a backlog's
# bookkeeping came in the middle of its bindings whenever these took longer: always at
# 12,500 nodes (over a minute of bindings, 4,250 status writes and as many Events), and at
# 5,000 on a loaded machine (6 December: the two rounds whose last binding came 40 and 45 s
# after launch, some 4 and 9 s after the release, read 0.65 and 0.57 of the ceiling against
# 0.77 for the round done in 34 s); each CRD status write costs the API server several
# bindings. Waiting so, bookkeeping is never later than the bindings ahead of it, and never
# waits for later arrivals (a steady stream rarely saturates the binder anyway). This bound
# is only a last resort, for bindings that hang (each request has its own timeout); it is
# above the 12,500-node backlog's ~70 s of bindings.
BOOKKEEPING_WAIT = 120.0


@dataclasses.dataclass(frozen=True)
class GangWritten:
    group: str
    placed: tuple[str, ...] = ()
    failed: Mapping[str, str] = dataclasses.field(default_factory=dict)  # pod -> reason
    skipped: str = ""  # why nothing was written
    seconds: float = 0.0  # from the burst's start (its slots taken) to its last reply
    limit: int = 0  # the bound on bindings in flight when the burst started

    @property
    def partial(self) -> bool:
        return bool(self.placed) and bool(self.failed)


def binding_body(namespace: str, name: str, node: str, devices: str = "",
                 plan: str = "") -> dict[str, Any]:
    """The pods/binding body; the API server copies a Binding's annotations onto the pod
    in the same write, so the GPU devices chosen (`devices`) and the gang's plan (`plan`,
    on its first binding) land with the bind."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    annotations = pod_annotations(devices, plan)
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": metadata,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def pod_annotations(devices: str, plan: str) -> dict[str, str]:
    """What a pod's bind or un-gate writes on it: its GPU devices, the gang's plan."""
    annotations = {GPU_INDEX_ANNOTATION: devices} if devices else {}
    if plan:
        annotations[PLAN_ANNOTATION] = plan
    return annotations


class GangBinder:
    def __init__(
        self,
        api: Api,
        assumed: AssumedPods,
        concurrency: int,
        clock: Callable[[], float] = time.time,
        reply_target_seconds: float | None = None,
        assumed_claims: AssumedClaims | None = None,
        first_limit: int | None = None,
    ) -> None:
        self._api = api
        self._assumed = assumed
        self.assumed_claims = assumed_claims or AssumedClaims(math.inf)
        # from the whole bound unless told (`first_limit`). It started at a quarter, after
        # 9 of 500 gangs were answered over 2-3.5 s started whole on a loaded machine
        # (bench-1000, the watcher's times). Timed by the API server's audit log, started
        # whole: 0 gangs partly bound in three backlog runs (1,000 nodes twice, 5,000
        # once), and 597-611 pods/s at 1,000 nodes against 367 from a quarter, the climb
        # having cost the first ~5 s at a third of the API server's rate
        start = concurrency if first_limit is None else first_limit
        self._limit = (InFlightLimit(concurrency, reply_target_seconds, start=start)
                       if reply_target_seconds is not None else None)
        # alone from half the configured bound, not half the adaptive limit (slots.py)
        self._slots = GangSlots(self._limit.limit if self._limit else concurrency,
                                alone_from=max(1, concurrency // 2), ceiling=concurrency)
        self._sent = 0  # requests sent, not answered yet
        self._clock = clock
        self.requests = 0
        self.in_flight = 0  # pods assumed whose write is not answered yet
        self.low_water = 2 * concurrency
        self.high_water = 8 * concurrency
        self._room = asyncio.Event()
        self._room.set()
        self._concurrency = concurrency
        self._idle = asyncio.Event()  # not saturated, or drained since (see `quiet`)
        self._idle.set()
        self._decided = 0  # pods ever given to the binder to write (answered: less in_flight)
        # bookkeeping waiting (see `quiet`): (pods decided before it, its turn), in order
        self._behind: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    async def room(self) -> None:
        """Return once at most `low_water` pods wait for their write. Deciding more while
        a long queue of writes drains only lengthens the queue and takes CPU from it;
        deciding when it runs low keeps the API server busy without a backlog."""
        await self._room.wait()

    def crowded(self) -> bool:
        """So many pods wait for their writes (about ten seconds of bindings at bench-5000's
        rate) that a gang decided now would wait for them anyway: new arrivals then wait
        for `room()` as well (see `SchedulingLoop`)."""
        return self.in_flight > self.high_water

    async def quiet(self) -> None:
        """Return at once unless the binder is saturated (more pods wait for their
        binding than may be in flight at once, the configured bound); once saturated,
        when the pods decided before the call are answered (every one, in a backlog
        decided in one cycle), or after `BOOKKEEPING_WAIT` seconds. Status writes and
        Events wait here (background.py), so the bindings of a backlog have the API
        server to themselves, and bookkeeping is never later than the bindings decided
        before it. Released when no more waited than the bound, as it was, a backlog's
        1,000 bookkeeping writes went out with its last 384 bindings."""
        if self._idle.is_set():
            await asyncio.sleep(0)  # the bindings decided with it are sent first
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._behind.append((self._decided, turn))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(turn, BOOKKEEPING_WAIT)

    def _track(self, pods: int) -> None:
        """`pods` more pods wait for their write (fewer, when negative: answered)."""
        self.in_flight += pods
        if pods > 0:
            self._decided += pods
        else:
            answered = self._decided - self.in_flight
            while self._behind and self._behind[0][0] <= answered:
                turn = self._behind.popleft()[1]
                if not turn.done():  # else its wait timed out
                    turn.set_result(None)
        if self.in_flight > self.low_water:
            self._room.clear()
        else:
            self._room.set()
        if self.in_flight > self._concurrency:
            self._idle.clear()
        elif self.in_flight == 0:  # drained: see `quiet`
            self._idle.set()

    def place_gang(
        self,
        group_key: str,
        assignments: Mapping[str, str],
        pods: Mapping[str, Body],
        plan: str = "",
        devices: Mapping[str, str] | None = None,
        claims: GangClaims | None = None,
    ) -> Coroutine[Any, Any, GangWritten]:
        """Assume every assigned pod on its node now, and return the writes to await (or
        run in the background). `plan` (the plan annotation's text) goes on the first
        pod's request, sent before the others. `devices`:
        pod key -> the GPU devices chosen (gpu-index text), written with its bind.
        `claims`: the gang's DRA claims, written before any binding."""
        devices = dict(devices or {})
        for pod_key, node in assignments.items():
            uid = str((pods.get(pod_key) or {}).get("metadata", {}).get("uid") or "")
            self._assumed.assume(pod_key, node, devices=devices.get(pod_key, ""), uid=uid)
        self._track(len(assignments))
        return self._write_gang(group_key, dict(assignments), pods, plan, devices, claims)

    async def _write_gang(
        self,
        group_key: str,
        assignments: Mapping[str, str],
        pods: Mapping[str, Body],
        plan: str,
        devices: Mapping[str, str],
        claims: GangClaims | None = None,
    ) -> GangWritten:
        failed: dict[str, str] = {}
        if claims is not None and claims.writes:
            failed = await write_claims(self._api, claims, self._slots.limit,
                                        self.assumed_claims, self._clock)
            for key in failed:
                self._assumed.forget(key)
            self._track(-len(failed))
            assignments = {k: v for k, v in assignments.items() if k not in failed}
        started: list[tuple[float, int]] = []
        replies = (await self._burst(assignments, pods, devices, started, plan)
                   if assignments else {})
        placed = []
        for key in assignments:
            reply = replies[key]
            if reply.ok:
                placed.append(key)
            else:
                failed[key] = f"{reply.status} {reply.reason}"
                self._assumed.forget(key)
        if not started:
            return GangWritten(group_key, tuple(placed), failed)
        moment, limit = started[0]
        return GangWritten(group_key, tuple(placed), failed, seconds=self._clock() - moment,
                           limit=limit)

    async def _burst(
        self, assignments: Mapping[str, str], pods: Mapping[str, Body],
        devices: Mapping[str, str], started: list[tuple[float, int]], plan: str = "",
    ) -> dict[str, Reply]:
        """Every pod's write, on the gang's slots (see slots.py for whose turn it is):
        each sender sends the next pod's request until none is left. `started` gets the
        moment the slots were taken (the burst's start, for the gang's log line) and the
        bound on requests in flight then. The first pod's request, sent before any
        other, carries `plan`."""
        todo = iter(list(assignments.items()))
        first = next(iter(assignments), None)
        replies: dict[str, Reply] = {}
        burst: Burst | None = None

        async def sender(burst: Burst) -> None:
            try:
                await burst.slot()
                for key, node in todo:
                    replies[key] = await self._place_pod(
                        key, node, pods.get(key), devices.get(key, ""), not burst.alone,
                        plan if key == first else "")
            finally:
                burst.sender_done()

        try:
            burst = await self._slots.take(len(assignments))
            started.append((self._clock(), self._slots.limit))
            await asyncio.gather(*(sender(burst) for _ in range(burst.senders)))
        finally:
            if burst is not None:
                burst.end()
            unsent = sum(1 for _ in todo)  # cancelled (shutdown): no longer in flight
            if unsent:
                self._track(-unsent)
        return replies

    @property
    def in_flight_limit(self) -> int:
        """The bound on binding requests in flight now (see in_flight_limit.py)."""
        return self._slots.limit

    @property
    def in_flight_held(self) -> bool:
        """Whether that bound holds because replies are slow for others' requests."""
        return self._limit is not None and self._limit.held

    def _replied(self, seconds: float, in_flight: int) -> None:
        """One reply's time to the limit; the slots follow its judgement. Only replies
        of gangs sharing the slots count: a gang going alone is not held to the limit, and
        its tail, with the API server waiting on its last replies, says nothing of it."""
        if self._limit is None:
            return
        limit = self._limit.observe(seconds, in_flight, self._slots.in_line > 0)
        if limit is not None:
            self._slots.resize(limit)

    async def _place_pod(self, pod_key: str, node: str, pod: Body | None, devices: str,
                         shared: bool, plan: str = "") -> Reply:
        sent = self._clock()
        self._sent += 1
        ahead = self._sent  # in flight as it is sent, itself included: what its reply waits on
        try:
            reply = await self._write_pod(pod_key, node, pod, devices, plan)
            if shared:
                self._replied(self._clock() - sent, ahead)
        finally:
            self._sent -= 1
            self._track(-1)
        if reply.ok:  # a binding is final; an un-gated pod waits for kube-scheduler
            self._assumed.written(pod_key, self._clock(),
                                  final=pod is None or not is_gated(pod))
        return reply

    async def _write_pod(self, pod_key: str, node: str, pod: Body | None, devices: str,
                         plan: str = "") -> Reply:
        namespace, name = pod_key.split("/", 1)
        self.requests += 1
        if pod is not None and is_gated(pod):
            patch = ungate_patch(pod, node, devices, plan)
            return await self._api.request("PATCH", pod_path(namespace, name), patch, MERGE_PATCH)
        body = binding_body(namespace, name, node, devices, plan)
        return await self._api.request("POST", pod_path(namespace, name, "binding"), body)
