"""Each cycle freezes the heap, and every thaw_seconds it is thawed once instead, so
cyclic garbage frozen by chance is freed in the end (observe/frozen_heap.py)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from phalanx.observe.frozen_heap import FrozenHeap


@pytest.fixture(autouse=True)
def thawed() -> Iterator[None]:
    thresholds = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


class Cycle:
    """A reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_a_cycle_freezes_what_is_alive_and_a_cycle_past_the_thaw_time_thaws_it():
    now = [0.0]
    heap = FrozenHeap(lambda: now[0], thaw_seconds=300)
    heap.cycle_started()
    assert gc.get_freeze_count() > 0
    now[0] = 299.0
    heap.cycle_started()
    assert gc.get_freeze_count() > 0
    now[0] = 300.0
    heap.cycle_started()
    assert gc.get_freeze_count() == 0
    now[0] = 301.0
    heap.cycle_started()  # the next thaw is 300 s after this one
    assert gc.get_freeze_count() > 0


def test_cyclic_garbage_frozen_by_chance_is_freed_after_the_thaw():
    now = [0.0]
    heap = FrozenHeap(lambda: now[0], thaw_seconds=300)
    garbage = Cycle()
    alive = weakref.ref(garbage)
    heap.cycle_started()  # frozen while in use
    del garbage
    gc.collect()
    assert alive() is not None  # garbage now, but out of the collector's reach
    now[0] = 300.0
    heap.cycle_started()  # thawed
    gc.collect()
    assert alive() is None


def test_thousands_of_new_objects_that_live_on_start_no_collection():
    """A cycle's objects (a GroupWork and a GroupDecision per group) live to its end: with
    a heap managed for cycles, making 10,000 of them starts no collection, where CPython's
    default starts one every 700."""
    collections: list[int] = []

    def counted(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    FrozenHeap(lambda: 0.0)
    gc.collect()
    gc.callbacks.append(counted)
    try:
        kept = [[index] for index in range(10_000)]
    finally:
        gc.callbacks.remove(counted)
    assert len(kept) == 10_000
    assert collections == []


def test_no_collection_while_a_cycle_decides_and_what_it_made_is_frozen_after():
    heap = FrozenHeap(lambda: 0.0)
    collections: list[int] = []

    def counted(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.collect()
    gc.callbacks.append(counted)
    try:
        with heap.deciding():
            assert not gc.isenabled()
            made = [[index] for index in range(200_000)]  # ten times the first threshold
    finally:
        gc.callbacks.remove(counted)
    assert collections == []
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made)


def test_deciding_leaves_a_collector_that_was_off_off():
    heap = FrozenHeap(lambda: 0.0)
    gc.disable()
    try:
        with heap.deciding():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_listed_page_kept_is_out_of_the_next_collections_reach():
    heap = FrozenHeap(lambda: 0.0)
    page = [{"metadata": {"name": f"pod-{index}"}} for index in range(1_000)]
    heap.keep()
    assert gc.get_freeze_count() >= 2 * len(page)  # each body and its metadata
