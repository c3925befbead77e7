"""The bound on bindings in flight follows the replies (operator/in_flight_limit.py): it
shrinks while they are slower than the target, grows while they are quicker and gangs
wait, and settles where an API server of a given rate answers in about the target."""

from __future__ import annotations

from phalanx.operator.in_flight_limit import InFlightLimit


def judged(limit: InFlightLimit, seconds: float, gangs_waited: bool = True) -> int | None:
    """A whole window of replies taking `seconds` each; the new bound, if any."""
    changes = [limit.observe(seconds, gangs_waited) for _ in range(limit.window)]
    assert changes[:-1] == [None] * (len(changes) - 1)  # judged only when the window ends
    return changes[-1]


def test_it_starts_at_a_quarter_of_the_ceiling_and_never_below_the_floor():
    assert InFlightLimit(384, 0.5).limit == 96
    assert InFlightLimit(40, 0.5).limit == 16
    assert InFlightLimit(8, 0.5).limit == 8  # a ceiling below the floor is the floor


def test_slow_replies_shrink_the_bound_in_proportion_at_most_by_half():
    limit = InFlightLimit(384, 0.5)
    assert judged(limit, 0.625) == 76  # 96 x 0.5 / 0.625
    assert judged(limit, 10.0) == 38  # at most by half
    for _ in range(10):
        judged(limit, 10.0)
    assert limit.limit == 16  # the floor


def test_quick_replies_grow_the_bound_only_while_gangs_wait_up_to_the_ceiling():
    limit = InFlightLimit(128, 0.5)
    assert judged(limit, 0.1, gangs_waited=False) is None  # nothing waits: nothing learnt
    assert judged(limit, 0.45) == 35  # 32 x 0.5 / 0.45, within a quarter
    assert judged(limit, 0.499) == 36  # at least one more
    assert judged(limit, 0.01) == 45  # at most a quarter more
    for _ in range(20):
        judged(limit, 0.01)
    assert limit.limit == 128


def test_one_waiting_gang_in_the_window_counts_as_waiting():
    limit = InFlightLimit(384, 0.5)
    window = limit.window
    changes = [limit.observe(0.1, gangs_waited=True)]
    changes += [limit.observe(0.1, gangs_waited=False) for _ in range(window - 1)]
    assert changes[-1] == 120  # 96 x 1.25
    assert judged(limit, 0.1, gangs_waited=False) is None  # a new window forgets it


def test_the_bound_settles_where_a_busy_api_server_answers_in_about_the_target():
    """An API server that binds 170 pods a second once busy: replies take in flight / 170
    seconds (Little's law), at least 50 ms. The bound, from its start, ends within a
    tenth of 170 x 0.5 = 85, however many it may have at most."""
    for ceiling in (128, 384, 1024):
        limit = InFlightLimit(ceiling, 0.5)
        for _ in range(200):
            judged(limit, max(0.05, limit.limit / 170))
        assert abs(limit.limit - 85) <= 9, (ceiling, limit.limit)
