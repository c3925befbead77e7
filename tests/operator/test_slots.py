"""Whose turn it is to bind: gangs in the order they ask, small ones sharing the slots,
a large one alone (operator/slots.py). No time passes in these tests: the rule is one of
order only, driven by slots given back."""

from __future__ import annotations

import asyncio

import pytest

from manual_clock import turns
from phalanx.operator.slots import Burst, GangSlots


def asking(slots: GangSlots, pods: int) -> asyncio.Task[Burst]:
    return asyncio.ensure_future(slots.take(pods))


async def test_small_gangs_share_the_slots_a_slot_per_pod():
    slots = GangSlots(8)  # alone from 4 pods
    first, second = await slots.take(2), await slots.take(3)
    assert (first.senders, second.senders, first.alone, second.alone) == (2, 3, False, False)
    assert slots.free == 3


async def test_a_gang_starts_with_the_slots_free_and_holds_back_every_later_one_till_served():
    slots = GangSlots(8)
    await slots.take(3)
    await slots.take(3)  # 2 free
    first, later = asking(slots, 3), asking(slots, 1)
    await turns()
    assert first.done() and first.result().owed == 1 and slots.free == 0
    assert not later.done()  # the first is owed a slot: it comes first
    slots.give(2)  # the first gets its last slot, then the later one goes
    await turns()
    assert first.result().owed == 0 and later.done() and slots.free == 0


async def test_a_gang_owed_slots_sends_on_each_as_it_comes_back():
    """The pipe stays full: a 128-pod gang that waited for all its slots at once let the
    bindings in flight fall to 192 at the API server where the ceiling contender kept 250
    (bench-5000, audit logs), and the API server bound fewer per second."""
    slots = GangSlots(4, alone_from=100)
    first = await slots.take(3)  # 1 free
    second = await slots.take(3)  # starts with it, owed 2
    senders = [asyncio.ensure_future(second.slot()) for _ in range(second.senders)]
    await turns()
    assert sum(task.done() for task in senders) == 1
    first.sender_done()
    first.sender_done()
    await turns()
    assert all(task.done() for task in senders) and second.owed == 0 and slots.free == 0


async def test_a_small_gangs_slot_goes_back_as_soon_as_its_sender_is_done():
    slots = GangSlots(4, alone_from=4)
    burst = await slots.take(3)
    waiting = asking(slots, 2)
    await turns()
    owed = waiting.result()
    assert owed.owed == 1  # started on the one free slot
    burst.sender_done()
    await turns()
    assert owed.owed == 0 and slots.free == 0


async def test_a_large_gang_starts_only_when_nothing_else_is_in_flight():
    slots = GangSlots(8)
    small = await slots.take(1)  # 7 free: enough for 6 pods, but not alone
    large = asking(slots, 6)
    await turns()
    assert not large.done()
    small.sender_done()
    await turns()
    assert large.done() and large.result().alone and large.result().senders == 6
    assert slots.free == 0


async def test_no_later_gang_starts_before_the_large_gangs_last_request_is_answered():
    slots = GangSlots(8)
    large = await slots.take(5)
    later = asking(slots, 1)
    for _ in range(large.senders):  # every sender has sent its last request ...
        large.sender_done()
    await turns()
    assert not later.done()  # ... but replies are still coming: the burst is alone
    large.end()
    await turns()
    assert later.done() and slots.free == 7


async def test_a_gang_larger_than_the_limit_takes_every_slot_and_gives_them_all_back():
    slots = GangSlots(8)
    burst = await slots.take(20)
    assert (burst.senders, burst.alone, slots.free) == (8, True, 0)
    burst.end()
    burst.end()  # twice is harmless
    assert slots.free == 8


async def test_a_cancelled_waiting_gang_lets_the_next_in_line_go():
    slots = GangSlots(8)
    held = await slots.take(3)
    large, small = asking(slots, 6), asking(slots, 2)
    await turns()
    large.cancel()
    with pytest.raises(asyncio.CancelledError):
        await large
    await turns()
    assert small.done() and not small.result().alone
    held.end()
    small.result().end()
    assert slots.free == 8


async def test_every_gang_gets_its_turn_in_order_and_a_large_one_alone():
    slots = GangSlots(8)
    sizes = [1, 7, 2, 30, 3, 4, 1, 1, 8, 2]
    tasks = [asking(slots, n) for n in sizes]
    order: list[int] = []
    in_flight: list[Burst] = []
    while len(order) < len(sizes):
        await turns()
        for i, task in enumerate(tasks):
            if task.done() and i not in order:
                order.append(i)
                in_flight.append(task.result())
                assert not task.result().alone or len(in_flight) == 1
        assert in_flight, "a gang waits for ever"
        oldest = in_flight.pop(0)  # the oldest burst is answered
        for _ in range(oldest.senders):
            oldest.sender_done()
        oldest.end()
    assert order == list(range(len(sizes)))
    assert slots.free == 8


async def test_after_a_shrink_no_gang_starts_until_the_bursts_in_flight_give_some_back():
    slots = GangSlots(8, alone_from=100)
    held = await slots.take(6)
    slots.resize(4)  # the burst keeps its 6: -2 free
    waiting = asking(slots, 3)
    await turns()
    assert slots.free == -2 and not waiting.done()
    for _ in range(2):
        held.sender_done()
    await turns()
    assert slots.free == 0 and not waiting.done()
    for _ in range(2):
        held.sender_done()
    await turns()
    burst = waiting.result()  # started on the 2 back, owed the third
    assert burst.senders == 3 and burst.owed == 1 and slots.free == 0
    held.sender_done()
    await turns()
    assert burst.owed == 0 and slots.free == 0
    held.end()
    burst.end()
    assert slots.free == 4


async def test_a_waiting_gang_is_judged_by_the_limit_when_its_turn_comes():
    slots = GangSlots(8)  # alone from half the limit
    held = await slots.take(3)
    waiting = asking(slots, 3)  # 5 free: it would go; but others wait before it
    slots.resize(6)  # alone from 3 pods now: it waits for everything to be back
    await turns()
    assert not waiting.done()  # 3 free < 6 it needs alone
    held.end()
    await turns()
    burst = waiting.result()
    assert burst.alone and burst.senders == 3 and slots.free == 0


async def test_a_growth_wakes_the_gangs_in_line_but_never_beside_one_going_alone():
    slots = GangSlots(4)
    alone = await slots.take(4)
    later = asking(slots, 1)
    slots.resize(8)  # 4 free now, but a gang goes alone
    await turns()
    assert not later.done()
    alone.end()
    await turns()
    assert later.done() and slots.free == 7
