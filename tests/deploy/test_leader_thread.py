"""The election on its own thread keeps renewing while the replica's event loop is busy
(a long cycle, a big LIST), and still hands over on a graceful stop."""

from __future__ import annotations

import asyncio
import time

from phalanx.config import LeaderElection
from phalanx.leader import ThreadedElector

from .fake_leases import FakeLeases

QUICK = LeaderElection(lease_name="phalanx-leader", lease_namespace="phalanx-system",
                       lease_duration_seconds=0.4, renew_deadline_seconds=0.3,
                       retry_period_seconds=0.05)
PATIENCE = 30.0  # a guard against a hang, not a measurement


class ClosableLeases(FakeLeases):
    async def close(self) -> None:
        return None


async def test_renewals_go_on_while_the_event_loop_is_blocked_and_stop_releases() -> None:
    api = ClosableLeases()
    elector = ThreadedElector(lambda: api, QUICK, "a")
    stop = asyncio.Event()
    campaign = asyncio.create_task(elector.run(stop))
    async with asyncio.timeout(PATIENCE):
        await elector.leading.wait()
    # Block this loop (as a long cycle would) well past the renew deadline; the election
    # thread renews meanwhile.
    writes = len(api.writes)
    deadline = time.monotonic() + PATIENCE
    while len(api.writes) < writes + 10:
        assert time.monotonic() < deadline, "no renewals while the loop was blocked"
        time.sleep(0.01)  # blocking on purpose: this loop must not run
    await asyncio.sleep(0)
    assert elector.leading.is_set() and not elector.deposed.is_set()
    assert api.holder == "a"
    stop.set()
    async with asyncio.timeout(PATIENCE):
        await campaign
    assert api.holder == ""  # released for an immediate handover


async def test_cancelling_leaves_the_lease_to_expire() -> None:
    api = ClosableLeases()
    elector = ThreadedElector(lambda: api, QUICK, "a")
    campaign = asyncio.create_task(elector.run(asyncio.Event()))
    async with asyncio.timeout(PATIENCE):
        await elector.leading.wait()
    campaign.cancel()
    await asyncio.gather(campaign, return_exceptions=True)
    assert api.holder == "a"  # a crash, as the other replicas see it
