"""The election loop: acquire or renew the Lease every retry period, step down when renewals
fail for longer than the renew deadline, release the Lease on a graceful stop.

Writes are updates carrying the resourceVersion that was read, so two candidates racing
for an expired lease cannot both win: the API server refuses the second with 409.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from phalanx.config.settings import LeaderElection
from phalanx.leader.record import Action, LeaseRecord, decide, lease_body, micro_time, parse_lease

log = structlog.get_logger("phalanx.leader")

Callback = Callable[[], Awaitable[None]]


class LeaseReply(Protocol):
    @property
    def status(self) -> int: ...

    @property
    def body(self) -> Mapping[str, Any]: ...


class LeaseApi(Protocol):
    """Raw JSON requests (`phalanx.operator.kube.client.KubeApi` fits)."""

    async def request(self, method: str, path: str, body: Any = None) -> LeaseReply: ...


async def _nothing() -> None:
    return None


class LeaderElector:
    def __init__(
        self,
        api: LeaseApi,
        settings: LeaderElection,
        identity: str,
        on_started_leading: Callback = _nothing,
        on_stopped_leading: Callback = _nothing,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        observe_attempt: Callable[[float], None] = lambda _seconds: None,
    ) -> None:
        if not identity:
            raise ValueError("leader election needs a non-empty identity (the pod name)")
        self.api = api
        self.settings = settings
        self.identity = identity
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._clock = clock
        self._wall = wall_clock
        self._observe_attempt = observe_attempt  # seconds each acquire/renew took (metrics)
        self._leader = False
        self._seen: tuple[str, str, str] | None = None
        self._observed_at = 0.0
        self._last_renewal = -math.inf
        self._record: LeaseRecord | None = None
        self.holder = ""
        self.leading = asyncio.Event()  # set while this replica leads
        self.deposed = asyncio.Event()  # set once it stopped leading (lost or stopped)

    @property
    def is_leader(self) -> bool:
        return self._leader

    @property
    def _path(self) -> str:
        le = self.settings
        return f"/apis/coordination.k8s.io/v1/namespaces/{le.lease_namespace}/leases"

    async def run(self, stop: asyncio.Event) -> None:
        """Campaign until `stop` is set; then release the lease if held.

        Cancelling the task instead (a crash, as far as the others can tell) leaves the
        lease to expire.
        """
        try:
            while not stop.is_set() and not self.deposed.is_set():  # deposed: the end
                await self.step()
                # No task per wait (asyncio.wait_for would make one): Kopf, stopping, waits
                # for every task created after it started, and this loop outlives it.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.settings.retry_period_seconds):
                        await stop.wait()
        except asyncio.CancelledError:
            await self._step_down("cancelled")
            raise
        if self._leader:
            await self.release()
            await self._step_down("stopped")

    async def step(self) -> None:
        """One attempt to acquire or renew, and the leadership change it implies."""
        began = self._clock()
        try:
            async with asyncio.timeout(self._attempt_limit(began)):
                renewed = await self._try_acquire_or_renew()
        except Exception as error:  # a dropped or hung connection must not end the campaign
            log.warning("lease request failed", error=repr(error))
            renewed = False
        now = self._clock()
        self._observe_attempt(now - began)
        if renewed:
            self._last_renewal = now
            if not self._leader:
                self._leader = True
                self.leading.set()
                log.info("became leader", identity=self.identity, lease=self.settings.lease_name)
                await self._on_started()
        elif self._leader and (
            self.holder not in ("", self.identity)
            or now - self._last_renewal >= self.settings.renew_deadline_seconds
        ):
            await self._step_down(f"lost the lease to {self.holder or 'nobody'}")

    def _attempt_limit(self, now: float) -> float:
        """How long one attempt may take. A leader's ends by its renew deadline: a request
        hanging past it would keep a leader that the others may think gone. It still gets
        a short floor (a retry period, at most the gap between deadline and lease), so a
        leader whose event loop was stalled past the deadline tries once more instead of
        giving up: the write carries the resourceVersion it read, so it can only succeed
        if nobody took the lease meanwhile. A candidate gets the whole renew deadline."""
        le = self.settings
        if self._leader:
            floor = min(le.retry_period_seconds,
                        le.lease_duration_seconds - le.renew_deadline_seconds)
            return max(floor, self._last_renewal + le.renew_deadline_seconds - now)
        return le.renew_deadline_seconds

    async def release(self) -> None:
        """Hand the lease over at once instead of letting it expire."""
        record = self._record
        if record is None or record.holder != self.identity:
            return
        body = self._body(
            record, holder="", duration=1, transitions=record.transitions, acquire="", renew=""
        )
        reply = await self.api.request("PUT", f"{self._path}/{self.settings.lease_name}", body)
        if 200 <= reply.status < 300:
            log.info("released the lease", identity=self.identity)

    async def _step_down(self, why: str) -> None:
        if self._leader:
            self._leader = False
            self.leading.clear()
            self.deposed.set()
            log.warning("stopped leading", identity=self.identity, reason=why)
            await self._on_stopped()

    async def _try_acquire_or_renew(self) -> bool:
        name = self.settings.lease_name
        reply = await self.api.request("GET", f"{self._path}/{name}")
        now = micro_time(self._wall())
        if reply.status == 404:
            body = self._body(
                None,
                holder=self.identity,
                duration=self._duration(),
                transitions=0,
                acquire=now,
                renew=now,
            )
            return self._accept(await self.api.request("POST", self._path, body))
        if not 200 <= reply.status < 300:
            log.warning("reading the lease failed", status=reply.status)
            return False
        record = self._observe(parse_lease(reply.body))
        action = decide(record, self.identity, self._observed_at, self._clock())
        if action is Action.WAIT:
            return False
        taking_over = action is Action.ACQUIRE
        body = self._body(
            record,
            holder=self.identity,
            duration=self._duration(),
            transitions=record.transitions + (1 if taking_over else 0),
            acquire=now if taking_over else record.acquire_time or now,
            renew=now,
        )
        return self._accept(await self.api.request("PUT", f"{self._path}/{name}", body))

    def _observe(self, record: LeaseRecord) -> LeaseRecord:
        """Remember when (on our clock) the record last changed."""
        if record.version != self._seen:
            self._seen = record.version
            self._observed_at = self._clock()
        self._record = record
        self.holder = record.holder
        return record

    def _accept(self, reply: LeaseReply) -> bool:
        if not 200 <= reply.status < 300:
            if reply.status != 409:  # 409: another candidate wrote first
                log.warning("writing the lease failed", status=reply.status)
            return False
        self._observe(parse_lease(reply.body))
        return self.holder == self.identity

    def _duration(self) -> int:
        return max(1, math.ceil(self.settings.lease_duration_seconds))

    def _body(
        self,
        record: LeaseRecord | None,
        *,
        holder: str,
        duration: int,
        transitions: int,
        acquire: str,
        renew: str,
    ) -> dict[str, Any]:
        return lease_body(
            name=self.settings.lease_name,
            namespace=self.settings.lease_namespace,
            holder=holder,
            duration_seconds=duration,
            transitions=transitions,
            acquire_time=acquire,
            renew_time=renew,
            resource_version=record.resource_version if record is not None else "",
        )
