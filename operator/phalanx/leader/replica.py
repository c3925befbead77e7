"""One operator replica: stand by until elected, lead until stopped or deposed.

A replica that loses the lease returns exit status 1 instead of campaigning again: the
process restarts as a clean follower, so no write planned under the old leadership can
still go out after another replica took over (client-go's leader election does the same).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import structlog

from phalanx.leader.elector import LeaderElector
from phalanx.observe.metrics import Metrics
from phalanx.observe.server import Health

log = structlog.get_logger("phalanx.leader")

Lead = Callable[[asyncio.Event], Awaitable[None]]

STOPPED = 0
DEPOSED = 1


async def run_replica(
    elector: LeaderElector | None,
    lead: Lead,
    stop: asyncio.Event,
    health: Health | None = None,
    metrics: Metrics | None = None,
) -> int:
    """Run `lead(stop_leading)` while this replica holds the lease; see the module doc.

    `lead` must return soon after `stop_leading` is set (e.g. Kopf's `stop_flag`). Without
    an elector (leader election disabled) the replica leads at once.
    """
    health = health or Health()
    metrics = metrics or Metrics()
    if elector is None:
        metrics.set_leader(True)
        await lead(stop)
        return STOPPED
    campaign_stop = asyncio.Event()
    campaign = asyncio.create_task(elector.run(campaign_stop), name="phalanx leader election")
    try:
        health.set_ready(True, "standing by")
        await _first(elector.leading.wait(), stop.wait(), campaign)
        if campaign.done():
            campaign.result()  # the campaign never ends on its own: raise what broke it
        if stop.is_set():
            return STOPPED
        metrics.set_leader(True)
        stop_leading = asyncio.Event()
        relay = asyncio.create_task(_relay(stop, elector.deposed, stop_leading))
        try:
            await lead(stop_leading)
        finally:
            relay.cancel()
        return DEPOSED if elector.deposed.is_set() and not stop.is_set() else STOPPED
    except asyncio.CancelledError:
        campaign.cancel()  # a crash, as the other replicas see it: the lease just expires
        raise
    finally:
        metrics.set_leader(False)
        if not campaign.done():
            campaign_stop.set()  # graceful: release the lease for a fast handover
            await campaign


async def _first(*waits: Awaitable[object]) -> None:
    """Wait until one of `waits` is done; cancel the waits created here (not given tasks)."""
    futures = [asyncio.ensure_future(w) for w in waits]
    created = [f for f, w in zip(futures, waits, strict=True) if f is not w]
    try:
        await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for future in created:
            future.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*created, return_exceptions=True)


async def _relay(stop: asyncio.Event, deposed: asyncio.Event, stop_leading: asyncio.Event) -> None:
    await _first(stop.wait(), deposed.wait())
    if deposed.is_set() and not stop.is_set():
        log.error("lost the leader lease; stopping to restart as a follower")
    stop_leading.set()
