"""One operator replica: warm standby until elected, lead until stopped or deposed.

The replica's work starts at once, elected or not, and is told when it leads: a standby
keeps its watches and caches current but decides nothing, so the cycle right after it
wins the lease runs on warm caches instead of first listing the whole cluster.

A replica that loses the lease returns exit status 1 instead of campaigning again: the
process restarts as a clean follower, so no write planned under the old leadership can
still go out after another replica took over (client-go's leader election does the same).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

from phalanx.leader.thread import Campaign
from phalanx.observe.metrics import Metrics
from phalanx.observe.server import Health

log = structlog.get_logger("phalanx.leader")

# work(stop, leading): runs until `stop` is set; decides nothing before `leading` is set.
Work = Callable[[asyncio.Event, asyncio.Event], Awaitable[None]]

STOPPED = 0
DEPOSED = 1


async def run_replica(
    elector: Campaign | None,
    work: Work,
    stop: asyncio.Event,
    health: Health | None = None,
    metrics: Metrics | None = None,
) -> int:
    """Run `work(stop_work, leading)` from the start; see the module doc.

    `work` must return soon after `stop_work` is set (e.g. Kopf's `stop_flag`); it is set
    on `stop` and when this replica is deposed. Without an elector (leader election
    disabled) the replica leads at once.
    """
    health = health or Health()
    metrics = metrics or Metrics()
    leading = asyncio.Event()
    if elector is None:
        metrics.set_leader(True)
        leading.set()
        await work(stop, leading)
        return STOPPED
    stop_work = asyncio.Event()
    campaign_stop = asyncio.Event()
    # Every wait is a task made before the work starts: Kopf, when it stops, waits up to
    # 5 s for the tasks created after it started, which would delay the lease's release.
    stopped = asyncio.create_task(stop.wait())
    elected = asyncio.create_task(elector.leading.wait())
    deposed = asyncio.create_task(elector.deposed.wait())
    waits = (stopped, elected, deposed)
    campaign = asyncio.create_task(elector.run(campaign_stop), name="phalanx leader election")
    running = asyncio.create_task(_run(work, stop_work, leading), name="phalanx replica work")
    try:
        health.set_ready(True, "standing by")
        await asyncio.wait((elected, stopped, campaign, running),
                           return_when=asyncio.FIRST_COMPLETED)
        if campaign.done():
            campaign.result()  # the campaign never ends on its own: raise what broke it
        if not stop.is_set() and not running.done():
            metrics.set_leader(True)
            leading.set()
            await asyncio.wait((stopped, deposed, running), return_when=asyncio.FIRST_COMPLETED)
        if elector.deposed.is_set() and not stop.is_set():
            log.error("lost the leader lease; stopping to restart as a follower")
        stop_work.set()
        await running
        return DEPOSED if elector.deposed.is_set() and not stop.is_set() else STOPPED
    except asyncio.CancelledError:
        campaign.cancel()  # a crash, as the other replicas see it: the lease just expires
        running.cancel()
        raise
    finally:
        metrics.set_leader(False)
        for wait in waits:
            wait.cancel()
        if not campaign.done():
            campaign_stop.set()  # graceful: release the lease for a fast handover
            await campaign


async def _run(work: Work, stop_work: asyncio.Event, leading: asyncio.Event) -> None:
    await work(stop_work, leading)
