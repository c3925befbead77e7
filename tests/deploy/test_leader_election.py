"""Leader election: one leader at a time, takeover after expiry, fast handover on release."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from phalanx.config import LeaderElection
from phalanx.leader import Action, LeaderElector, LeaseRecord, decide

from .fake_leases import FakeLeases

SETTINGS = LeaderElection(
    lease_name="phalanx-leader",
    lease_namespace="phalanx-system",
    lease_duration_seconds=15,
    renew_deadline_seconds=10,
    retry_period_seconds=2,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Log:
    def __init__(self) -> None:
        self.events: list[str] = []

    def recorder(self, name: str, what: str) -> Any:
        async def record() -> None:
            self.events.append(f"{name} {what}")

        return record


def elector(api: FakeLeases, name: str, clock: Clock, log: Log) -> LeaderElector:
    return LeaderElector(
        api,
        SETTINGS,
        name,
        on_started_leading=log.recorder(name, "started"),
        on_stopped_leading=log.recorder(name, "stopped"),
        clock=clock,
        wall_clock=lambda: datetime.fromtimestamp(clock.now, UTC),
    )


def test_decide() -> None:
    held = LeaseRecord(holder="a", duration_seconds=15, transitions=0)
    assert decide(None, "b", 0, 0) is Action.ACQUIRE
    assert decide(LeaseRecord("", 15, 3), "b", 0, 0) is Action.ACQUIRE
    assert decide(held, "a", 0, 100) is Action.RENEW
    assert decide(held, "b", observed_at=100, now=114) is Action.WAIT
    assert decide(held, "b", observed_at=100, now=115) is Action.ACQUIRE


async def test_first_candidate_creates_the_lease_and_leads() -> None:
    api, clock, log = FakeLeases(), Clock(), Log()
    a = elector(api, "a", clock, log)
    await a.step()
    assert a.is_leader and api.holder == "a"
    assert api.lease is not None and api.lease["spec"]["leaseDurationSeconds"] == 15
    assert log.events == ["a started"]


async def test_only_one_leader_while_the_lease_is_renewed() -> None:
    api, clock, log = FakeLeases(), Clock(), Log()
    a, b = elector(api, "a", clock, log), elector(api, "b", clock, log)
    for _ in range(20):
        await a.step()
        await b.step()
        clock.now += SETTINGS.retry_period_seconds
    assert a.is_leader and not b.is_leader
    assert log.events == ["a started"]


async def test_follower_takes_over_only_after_a_full_lease_duration_of_silence() -> None:
    api, clock, log = FakeLeases(), Clock(), Log()
    a, b = elector(api, "a", clock, log), elector(api, "b", clock, log)
    await a.step()
    await b.step()  # b sees a's record now
    # a dies: no more renewals. b waits the lease duration measured on its own clock.
    clock.now += 14
    await b.step()
    assert not b.is_leader
    clock.now += 1
    await b.step()
    assert b.is_leader and api.holder == "b"
    assert api.lease is not None and api.lease["spec"]["leaseTransitions"] == 1


async def test_a_stale_renew_time_written_by_another_clock_does_not_count() -> None:
    api, clock, log = FakeLeases(), Clock(), Log()
    a = elector(api, "a", clock, log)
    await a.step()
    assert api.lease is not None
    api.lease["spec"]["renewTime"] = "2000-01-01T00:00:00.000000Z"  # skewed clock of a
    b = elector(api, "b", clock, log)
    await b.step()
    assert not b.is_leader  # b has not itself seen the lease go quiet for 15 s


async def test_leader_steps_down_when_renewals_fail_past_the_deadline() -> None:
    api, clock, log = FakeLeases(), Clock(), Log()
    a = elector(api, "a", clock, log)
    await a.step()
    api.down = True
    clock.now += 9
    await a.step()
    assert a.is_leader  # within the renew deadline
    clock.now += 1
    await a.step()
    assert not a.is_leader
    assert log.events == ["a started", "a stopped"]


async def test_a_hung_renewal_is_abandoned_by_the_renew_deadline() -> None:
    # A request that never answers must not keep a leader past its deadline: by then
    # another replica may already have taken the expired lease.
    api, clock, log = FakeLeases(), Clock(), Log()
    quick = SETTINGS.model_copy(update={"lease_duration_seconds": 0.4,
                                        "renew_deadline_seconds": 0.3,
                                        "retry_period_seconds": 0.05})
    a = LeaderElector(api, quick, "a", on_started_leading=log.recorder("a", "started"),
                      on_stopped_leading=log.recorder("a", "stopped"), clock=clock,
                      wall_clock=lambda: datetime.fromtimestamp(clock.now, UTC))
    await a.step()
    api.hang = True
    clock.now += quick.renew_deadline_seconds + 0.01  # past it: the attempt gets its floor
    async with asyncio.timeout(5):  # a guard against a hang, not a measurement
        await a.step()
    assert not a.is_leader
    assert log.events == ["a started", "a stopped"]


async def test_a_leader_stalled_past_its_deadline_renews_if_nobody_took_the_lease() -> None:
    # The event loop was busy (a long cycle, a big LIST): the deadline passed on the clock,
    # but the lease is still ours, and the conditional write proves it.
    api, clock, log = FakeLeases(), Clock(), Log()
    a = elector(api, "a", clock, log)
    await a.step()
    clock.now += SETTINGS.renew_deadline_seconds + 0.5
    await a.step()
    assert a.is_leader and api.holder == "a"
    assert log.events == ["a started"]


async def test_leader_steps_down_at_once_when_another_holds_the_lease() -> None:
    api, clock, log = FakeLeases(), Clock(), Log()
    a = elector(api, "a", clock, log)
    await a.step()
    assert api.lease is not None
    api.lease["spec"]["holderIdentity"] = "intruder"
    api.lease["metadata"]["resourceVersion"] = "99"
    await a.step()
    assert not a.is_leader


async def test_racing_candidates_cannot_both_win() -> None:
    api, clock, log = FakeLeases(), Clock(), Log()
    a, b = elector(api, "a", clock, log), elector(api, "b", clock, log)
    await asyncio.gather(a.step(), b.step())
    assert [a.is_leader, b.is_leader].count(True) == 1


async def test_graceful_stop_releases_for_an_immediate_handover() -> None:
    api, clock, log = FakeLeases(), Clock(), Log()
    a, b = elector(api, "a", clock, log), elector(api, "b", clock, log)
    stop = asyncio.Event()
    task = asyncio.create_task(a.run(stop))
    while not a.is_leader:
        await asyncio.sleep(0)
    stop.set()
    await task
    assert api.holder == ""
    await b.step()
    assert b.is_leader  # no need to wait for expiry
    assert log.events == ["a started", "a stopped", "b started"]


async def test_cancelling_does_not_release() -> None:
    api, clock, log = FakeLeases(), Clock(), Log()
    a = elector(api, "a", clock, log)
    task = asyncio.create_task(a.run(asyncio.Event()))
    while not a.is_leader:
        await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert api.holder == "a"  # as after a crash: the lease must expire
    assert log.events == ["a started", "a stopped"]
