"""RoomIndex walks members in the order the sorts it replaces gave, while they move
(a gang always needs room for at least one pod)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from phalanx.core.placement.rooms import RoomIndex

rooms_st = st.lists(st.integers(min_value=0, max_value=9), min_size=1, max_size=40)
moves_st = st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 9)), max_size=30)


@given(rooms_st, moves_st, st.integers(min_value=1, max_value=10))
def test_order_matches_sorting_after_moves(
    rooms: list[int], moves: list[tuple[int, int]], need: int
) -> None:
    members = list(range(0, len(rooms), 2))  # a subset, as a level's domains are
    index = RoomIndex(members, rooms)
    for pick, new in moves:
        member = members[pick % len(members)]
        index.move(member, rooms[member], new)
        rooms[member] = new
    fitting = [m for m in members if rooms[m] >= need]
    assert list(index.tightest(need)) == sorted(fitting, key=lambda m: (rooms[m], m))
    assert list(index.roomiest(need)) == sorted(fitting, key=lambda m: (-rooms[m], m))
    full = [m for m in members if rooms[m] > 0]
    most = max(full, key=lambda m: (rooms[m], -m)) if full else None
    assert index.most() == ((rooms[most], most) if most is not None else None)
    assert index.most_room() == max((rooms[m] for m in members), default=0)
