"""Members (the domains of one level, or the nodes of one leaf domain) grouped by how
many pods of one shape each can still take.

Placing a single pod, or rejecting a gang, used to scan every domain of a level and
sort them by room: at 5,000 hosts that is 5,000 steps per pod. Rooms are small
integers (pods per node), so a handful of buckets keyed by room answer "the tightest
member with room for n", "the roomiest member" and "the most room anywhere" in a few
steps, and a placement moves only the members on the node's ancestor path between
buckets. Order within a room is by member id, as the sorts it replaces used.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from heapq import heappop, heappush
from itertools import compress, islice


class RoomIndex:
    """`buckets[room]`: the members with exactly that room (> 0); `heaps[room]` the same
    members as a heap for the lowest id (it may also hold members that have left the
    bucket since, which are dropped when they reach the top)."""

    __slots__ = ("buckets", "heaps", "members", "room")

    def __init__(self, members: Sequence[int], room: Sequence[int]) -> None:
        """`room` is kept (not copied): its owner changes it in place and calls `move`
        for each change, so it always agrees with the buckets (`lowest` reads it)."""
        buckets: dict[int, set[int]] = {}
        heaps: dict[int, list[int]] = {}
        self.members = sorted(members)
        self.room = room
        for member in self.members:
            count = room[member]
            if count > 0:
                bucket = buckets.get(count)
                if bucket is None:
                    buckets[count] = {member}
                    heaps[count] = [member]
                else:
                    bucket.add(member)
                    heaps[count].append(member)  # ascending order is a heap
        self.buckets = buckets
        self.heaps = heaps

    def move(self, member: int, old: int, new: int) -> None:
        buckets = self.buckets
        if old > 0:
            bucket = buckets[old]
            bucket.discard(member)
            if not bucket:
                del buckets[old]
                del self.heaps[old]
        if new > 0:
            found = buckets.get(new)
            if found is None:
                buckets[new] = {member}
                self.heaps[new] = [member]
            elif member not in found:
                found.add(member)
                heappush(self.heaps[new], member)

    def first(self, room: int) -> int:
        """The lowest id with exactly this room (which must have members)."""
        heap, bucket = self.heaps[room], self.buckets[room]
        while heap[0] not in bucket:
            heappop(heap)
        return heap[0]

    def most_room(self) -> int:
        """The largest room of any member (0 if all are full)."""
        return max(self.buckets) if self.buckets else 0

    def most(self) -> tuple[int, int] | None:
        """(room, member) of the roomiest member, lowest id among equals; None if all
        are full."""
        if not self.buckets:
            return None
        room = max(self.buckets)
        return room, self.first(room)

    def tightest(self, need: int) -> Iterator[int]:
        """Members with room >= need (>= 1), by (room, id): least room left first."""
        rooms = sorted(r for r in self.buckets if r >= need)
        return self._walk(rooms)

    def lowest(self, need: int, limit: int) -> list[int]:
        """The `limit` lowest ids with room >= need (first fit order), any room: the
        members in id order, filtered by their room and cut at `limit`, all in C
        (itertools), stopping at the last one taken. Gathering the buckets' ids and
        sorting them (a lone pod's candidate window, every pod of an Alibaba simulator
        cycle) went through every member that fits, ~1,000 on a filling cluster, to keep
        the 128 or 256 first."""
        fits = map(need.__le__, map(self.room.__getitem__, self.members))
        return list(islice(compress(self.members, fits), limit))

    def roomiest(self, need: int) -> Iterator[int]:
        """Members with room >= need (>= 1), by (-room, id): most room first."""
        rooms = sorted((r for r in self.buckets if r >= need), reverse=True)
        return self._walk(rooms)

    def _walk(self, rooms: list[int]) -> Iterator[int]:
        """Callers place pods between steps and roll them back before asking for the
        next, so each bucket is looked up again (it may have been emptied and made
        anew) and only sorted if the first member was not enough."""
        buckets = self.buckets
        for room in rooms:
            yield self.first(room)
            if len(buckets[room]) > 1:
                yield from sorted(buckets[room])[1:]
