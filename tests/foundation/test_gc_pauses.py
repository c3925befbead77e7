"""The collector's pauses are timed and handed out once each (observe/gc_pauses.py)."""

from __future__ import annotations

import gc

from phalanx.observe.gc_pauses import GcPauses, recorded_pauses


def test_each_pause_is_counted_once_with_the_longest_of_those_not_yet_seen():
    moments = iter([10.0, 10.5, 20.0, 20.1, 30.0, 32.0])
    pauses = GcPauses(clock=lambda: next(moments))
    pauses("start", {"generation": 0})
    pauses("stop", {"generation": 0})
    pauses("start", {"generation": 2})
    pauses("stop", {"generation": 2})
    first = pauses.since()
    assert (round(first.seconds, 6), first.collections, first.full, first.longest) == (
        0.6, 2, 1, 0.5)
    pauses("start", {"generation": 1})
    pauses("stop", {"generation": 1})
    second = pauses.since()
    assert (second.seconds, second.collections, second.full, second.longest) == (2.0, 1, 0, 2.0)
    assert pauses.since().collections == 0


def test_the_process_recorder_hears_real_collections_and_is_hooked_once():
    pauses = recorded_pauses()
    assert recorded_pauses() is pauses and gc.callbacks.count(pauses) == 1
    pauses.since()
    gc.collect()
    heard = pauses.since()
    assert heard.full == 1 and heard.seconds > 0
