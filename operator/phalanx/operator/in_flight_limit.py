"""How many bindings may be in flight: as many as keep the API server's replies quick.

Past the point where the API server is busy, more requests in flight bring no more
bindings per second, only longer replies (Little's law: in flight = rate x reply time).
A gang's pods are bound one request each, sent together; the longer each reply takes, the
further apart its pods land, and a watcher sees the gang partly bound (bench-5000, 384 in
flight: ~2.2 s per reply, 25 gangs bound over more than 2 s; 96-128 in flight: 1 gang,
10-12% fewer bindings per second). No fixed number suits every API server and every load,
so the bound follows the replies:

- After every `window` replies, the median reply time of the window is compared with the
  target. Slower: the bound shrinks in proportion (at most by half), so a busy API server
  is given fewer requests at once. Quicker, and some gang had to wait for slots in the
  window: the bound grows in proportion (at most by a quarter, at least by one), up to the
  configured ceiling. Quicker and no gang waited: nothing is learnt, nothing changes.
- It starts at a quarter of the ceiling (and never goes below `floor`), so the first burst
  does not find out the API server's limit with every gang's bindings at once.

Pure: the binder feeds it reply times and whether gangs waited, and resizes its slots.
"""

from __future__ import annotations

import statistics

FLOOR = 16  # a bound below this leaves the API server idle between replies
START_SHARE = 4  # start at ceiling / START_SHARE
MAX_SHRINK = 0.5
MAX_GROWTH = 1.25


class InFlightLimit:
    def __init__(self, ceiling: int, target_seconds: float, floor: int = FLOOR) -> None:
        self.ceiling = ceiling
        self.floor = min(floor, ceiling)
        self.target_seconds = target_seconds
        self.limit = max(self.floor, ceiling // START_SHARE)
        self._replies: list[float] = []
        self._gangs_waited = False

    @property
    def window(self) -> int:
        """Replies per judgement: a quarter of the bound, so a decision is made a few times
        per round of requests in flight, on enough replies for a median."""
        return max(8, self.limit // 4)

    def observe(self, reply_seconds: float, gangs_waited: bool) -> int | None:
        """Record one reply's time; the new bound when a window ends with a change, else
        None. `gangs_waited`: some gang was waiting for slots when this reply came."""
        self._replies.append(reply_seconds)
        self._gangs_waited = self._gangs_waited or gangs_waited
        if len(self._replies) < self.window:
            return None
        median = statistics.median(self._replies)
        new = self._judged(median, self._gangs_waited)
        self._replies.clear()
        self._gangs_waited = False
        if new == self.limit:
            return None
        self.limit = new
        return new

    def _judged(self, median: float, gangs_waited: bool) -> int:
        if median > self.target_seconds:
            factor = max(MAX_SHRINK, self.target_seconds / median)
            return max(self.floor, int(self.limit * factor))
        if not gangs_waited:
            return self.limit
        factor = min(MAX_GROWTH, self.target_seconds / max(median, 1e-9))
        return min(self.ceiling, max(self.limit + 1, int(self.limit * factor)))
