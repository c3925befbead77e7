"""The bound on bindings in flight follows the replies (operator/in_flight_limit.py): it
aims at the rate the replies come at times the target reply time, shrinks while they are
slower than the target, grows while they are quicker and gangs wait in line, and settles
where an API server of a given rate answers in about the target. A shrink on slow replies
must make them quicker: replies slow for others' requests keep the bound, which then climbs
while each step up costs little."""

from __future__ import annotations

from phalanx.operator.in_flight_limit import PROBE_WINDOWS, InFlightLimit


def judged(limit: InFlightLimit, seconds: float, in_flight: int | None = None,
           gangs_waiting: bool = True) -> int | None:
    """A whole window of replies taking `seconds` each with `in_flight` requests out (the
    bound, unless told); the new bound, if any."""
    out = limit.limit if in_flight is None else in_flight
    changes = [limit.observe(seconds, out, gangs_waiting) for _ in range(limit.window)]
    assert changes[:-1] == [None] * (len(changes) - 1)  # judged only when the window ends
    return changes[-1]


def test_it_starts_at_a_quarter_of_the_ceiling_and_never_below_the_floor():
    assert InFlightLimit(384, 0.5).limit == 96
    assert InFlightLimit(80, 0.5).limit == 32
    assert InFlightLimit(8, 0.5).limit == 8  # a ceiling below the floor is the floor


def test_slow_replies_shrink_the_bound_to_the_rate_times_the_target_at_most_by_a_quarter():
    limit = InFlightLimit(384, 0.5)
    assert judged(limit, 0.6) == 80  # 96 in flight / 0.6 s = 160 a second; x 0.5 s
    assert judged(limit, 10.0) is None  # the window after a step answers requests from before
    assert judged(limit, 10.0) == 60  # at most by a quarter at once
    for _ in range(20):
        judged(limit, limit.limit / 8)  # an API server answering 8 a second, to us alone
    assert limit.limit == 32  # the floor
    assert not limit.held


def test_replies_slower_by_more_than_the_shrink_keep_it():
    """0.6 s, then 10 s after a shrink of a sixth: a pause or others' burst, not a verdict
    on the shrink; it stays and the next shrink follows the target."""
    limit = InFlightLimit(384, 0.5)
    assert judged(limit, 0.6) == 80
    judged(limit, 0.6)
    assert judged(limit, 10.0) == 60
    assert not limit.held


def test_a_shrink_that_brings_no_quicker_replies_is_taken_back_and_held():
    """Replies take 1.2 s whatever this process has in flight (others' load): the shrink
    to 80 is undone by the next window, and the bound holds for PROBE_WINDOWS windows."""
    limit = InFlightLimit(384, 1.0)
    assert judged(limit, 1.2) == 80  # 96 / 1.2 x 1.0
    assert judged(limit, 1.2) is None  # the window after the step is let pass
    assert judged(limit, 1.2) == 96  # no quicker: back
    assert limit.held
    assert [judged(limit, 1.2) for _ in range(PROBE_WINDOWS)] == [None] * PROBE_WINDOWS
    assert judged(limit, 1.2) == 110  # then a step up: 96 x 1.15


def test_held_the_bound_climbs_while_steps_up_cost_little_and_gangs_wait():
    limit = InFlightLimit(384, 1.0)
    for _ in range(3 + PROBE_WINDOWS):  # a shrink, its window let pass, back, held
        judged(limit, 1.2)
    steps = [judged(limit, 1.2) for _ in range(24)]
    assert steps[:6] == [110, None, 126, None, 145, None]  # at once while the last one paid
    assert limit.limit == 384  # up to the ceiling
    assert judged(limit, 1.2) is None


def test_held_without_gangs_waiting_the_bound_does_not_climb():
    limit = InFlightLimit(384, 1.0)
    for _ in range(3):
        judged(limit, 1.2)
    assert limit.held
    for _ in range(10):
        assert judged(limit, 1.2, gangs_waiting=False) is None
    assert limit.limit == 96


def test_a_step_up_that_slows_replies_by_more_than_half_its_share_is_taken_back():
    """Held at 96, a step to 110 (+15%) brings replies 10% slower: more than half of it
    is this process's; back to 96, and the next try after the hold is a step down."""
    limit = InFlightLimit(384, 1.0)
    for _ in range(3 + PROBE_WINDOWS):
        judged(limit, 1.2)
    assert judged(limit, 1.2) == 110
    judged(limit, 1.2)
    assert judged(limit, 1.32) == 96
    for _ in range(PROBE_WINDOWS):
        assert judged(limit, 1.2) is None
    assert judged(limit, 1.2) == 72  # 96 x 0.75


def test_quick_replies_end_the_hold():
    limit = InFlightLimit(384, 1.0)
    for _ in range(3):
        judged(limit, 1.2)
    assert limit.held
    assert judged(limit, 0.8) == 110  # 96 / 0.8 = 120 at most 15% more
    assert not limit.held


def test_the_bound_settles_where_its_own_part_of_the_reply_is_about_the_others_part():
    """Replies take 1 s of others' load plus in flight / 170 s of this process's own, with
    a target of 0.75 s that no bound can reach: the bound neither falls to the floor nor
    runs to the ceiling, but stays around 170 (where both parts are 1 s)."""
    limit = InFlightLimit(384, 0.75)
    seen = []
    for _ in range(300):
        judged(limit, 1.0 + limit.limit / 170)
        seen.append(limit.limit)
    assert min(seen[50:]) >= 90 and max(seen[50:]) <= 260, (min(seen[50:]), max(seen[50:]))


def test_slow_replies_with_few_requests_out_still_shrink_only_by_a_quarter():
    limit = InFlightLimit(384, 0.5)
    assert judged(limit, 1.0, in_flight=4) == 72


def test_quick_replies_grow_the_bound_only_while_gangs_wait_up_to_the_ceiling():
    limit = InFlightLimit(256, 0.5)
    assert judged(limit, 0.1, gangs_waiting=False) is None  # none waits: nothing learnt
    assert judged(limit, 0.45) == 71  # 64 / 0.45 x 0.5
    assert judged(limit, 0.499) == 72  # at least one more
    assert judged(limit, 0.01) == 83  # at most 15% more
    for _ in range(30):
        judged(limit, 0.01)
    assert limit.limit == 256


def test_one_waiting_gang_in_the_window_counts_and_a_new_window_forgets_it():
    limit = InFlightLimit(384, 0.5)
    changes = [limit.observe(0.1, 96, gangs_waiting=True)]
    changes += [limit.observe(0.1, 96, gangs_waiting=False) for _ in range(limit.window - 1)]
    assert changes[-1] == 110  # 96 x 1.15
    assert judged(limit, 0.1, gangs_waiting=False) is None


def test_the_bound_settles_where_a_busy_api_server_answers_in_about_the_target():
    """An API server that binds 170 pods a second once busy: replies take in flight / 170
    seconds (Little's law), at least 50 ms. The bound, from its start, ends within a
    tenth of 170 x 0.5 = 85, whatever it may have at most."""
    for ceiling in (128, 384, 1024):
        limit = InFlightLimit(ceiling, 0.5)
        for _ in range(200):
            judged(limit, max(0.05, limit.limit / 170))
        assert abs(limit.limit - 85) <= 9, (ceiling, limit.limit)


def test_replies_that_cannot_come_quicker_keep_the_bound_at_the_rate_of_the_target():
    """Replies take at least 0.6 s whatever is in flight, and 120 a second are bound at
    most: with a target of 0.75 s the bound settles at about 120 x 0.75 = 90."""
    limit = InFlightLimit(384, 0.75)
    for _ in range(200):
        judged(limit, max(0.6, limit.limit / 120))
    assert abs(limit.limit - 90) <= 9, limit.limit
