"""A replica stands by, leads while elected, and says why it stopped leading."""

from __future__ import annotations

import asyncio

from phalanx.config import LeaderElection
from phalanx.leader import DEPOSED, STOPPED, LeaderElector, run_replica
from phalanx.observe import Health, Metrics

from .fake_leases import FakeLeases

QUICK = LeaderElection(
    lease_name="phalanx-leader",
    lease_namespace="phalanx-system",
    lease_duration_seconds=0.4,
    renew_deadline_seconds=0.3,
    retry_period_seconds=0.05,
)
PATIENCE = 30.0


class Work:
    """A stand-in for the operator: runs from the start (warm standby), records when it was
    told it leads, returns when told to stop."""

    def __init__(self) -> None:
        self.running = asyncio.Event()
        self.started = asyncio.Event()  # leading
        self.stopped = False

    async def __call__(self, stop: asyncio.Event, leading: asyncio.Event) -> None:
        self.running.set()
        waits = [asyncio.create_task(e.wait()) for e in (stop, leading)]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if leading.is_set():
            self.started.set()
        await stop.wait()
        for waiting in waits:
            waiting.cancel()
        self.stopped = True


def leader_gauge(metrics: Metrics) -> float | None:
    return metrics.registry.get_sample_value("phalanx_leader")


async def test_without_election_the_replica_leads_at_once() -> None:
    work, stop, metrics = Work(), asyncio.Event(), Metrics()
    task = asyncio.create_task(run_replica(None, work, stop, metrics=metrics))
    await work.started.wait()
    assert leader_gauge(metrics) == 1
    stop.set()
    assert await task == STOPPED


async def test_elected_replica_leads_and_releases_on_stop() -> None:
    api, work, stop, metrics = FakeLeases(), Work(), asyncio.Event(), Metrics()
    task = asyncio.create_task(
        run_replica(LeaderElector(api, QUICK, "a"), work, stop, metrics=metrics)
    )
    async with asyncio.timeout(PATIENCE):
        await work.started.wait()
    assert leader_gauge(metrics) == 1 and api.holder == "a"
    stop.set()
    assert await task == STOPPED
    assert work.stopped and api.holder == "" and leader_gauge(metrics) == 0


async def test_follower_stands_by_warm_ready_but_never_told_to_lead() -> None:
    api = FakeLeases()
    leader = LeaderElector(api, QUICK, "a")
    await leader.step()
    health, work, stop = Health(), Work(), asyncio.Event()
    attempted = asyncio.Event()
    follower = LeaderElector(api, QUICK, "b", observe_attempt=lambda _s: attempted.set())
    task = asyncio.create_task(run_replica(follower, work, stop, health))
    for _ in range(10):  # "a" renews before each of b's attempts; "b" must never start
        await leader.step()
        attempted.clear()
        async with asyncio.timeout(PATIENCE):
            await attempted.wait()
    assert health.ready and health.reason == "standing by"
    assert work.running.is_set()  # its caches are kept warm
    assert not work.started.is_set()  # but it never leads
    stop.set()
    assert await task == STOPPED
    assert work.stopped
    assert api.holder == "a"  # a follower releases nothing


async def test_deposed_leader_stops_its_work_and_reports_it() -> None:
    api, work, stop, metrics = FakeLeases(), Work(), asyncio.Event(), Metrics()
    task = asyncio.create_task(
        run_replica(LeaderElector(api, QUICK, "a"), work, stop, metrics=metrics)
    )
    async with asyncio.timeout(PATIENCE):
        await work.started.wait()
    api.take("intruder")
    assert await task == DEPOSED
    assert work.stopped and leader_gauge(metrics) == 0
    assert api.holder == "intruder"


async def test_crashed_leader_leaves_the_lease_to_expire() -> None:
    api, work = FakeLeases(), Work()
    task = asyncio.create_task(run_replica(LeaderElector(api, QUICK, "a"), work, asyncio.Event()))
    async with asyncio.timeout(PATIENCE):
        await work.started.wait()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert api.holder == "a"
    now = [0.0]  # the follower's clock, moved by hand: no waiting for the lease to expire
    follower = LeaderElector(api, QUICK, "b", clock=lambda: now[0])
    steps = 0
    while not follower.is_leader:  # takes over once the lease went quiet long enough
        await follower.step()
        now[0] += QUICK.retry_period_seconds
        steps += 1
        assert steps < 100
    assert api.holder == "b"
    assert now[0] >= QUICK.lease_duration_seconds  # not before the lease could expire
