"""The bound on bindings in flight follows the replies (operator/in_flight_limit.py): it
aims at the rate the replies come at times the target reply time, shrinks while they are
slower than the target, grows while they are quicker and gangs wait in line, and settles
where an API server of a given rate answers in about the target."""

from __future__ import annotations

from phalanx.operator.in_flight_limit import InFlightLimit


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


def test_slow_replies_shrink_the_bound_to_the_rate_times_the_target_at_most_by_half():
    limit = InFlightLimit(384, 0.5)
    assert judged(limit, 0.6) == 80  # 96 in flight / 0.6 s = 160 a second; x 0.5 s
    assert judged(limit, 10.0) == 60  # at most by a quarter at once
    for _ in range(10):
        judged(limit, 10.0)
    assert limit.limit == 32  # the floor


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
