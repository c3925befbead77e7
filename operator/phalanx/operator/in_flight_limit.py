"""How many bindings may be in flight: as many as keep the API server's replies quick.

Past the point where the API server is busy, more requests in flight bring few more
bindings per second, only longer replies (Little's law: in flight = rate x reply time).
A gang's pods are bound one request each, sent together; the longer each reply takes, the
further apart its pods land, and a watcher sees the gang partly bound (bench-5000, 384 in
flight: ~2.2 s per reply, 25 gangs bound over more than 2 s; 96-128 in flight: 1 gang,
10-12% fewer bindings per second). No fixed number suits every API server and every load,
so the bound follows the replies:

- After every `window` replies, the rate they came at is read from the window's mean
  requests in flight and mean reply time (Little's law), and the bound aims at that rate
  times the target reply time. Replies slower than the target: the bound shrinks to it (at
  most by a quarter at once, never below `floor`). Quicker, while some gang waited in line
  for slots: the bound grows to it (at most by 15% at once, at least by one, never above
  the ceiling). Quicker and no gang waited: nothing is learnt, nothing changes.
- Only replies to gangs sharing the slots are judged (see the binder).
- The target trades a gang's spread against the share of the API server this process
  takes while others write too (bench-5000, Phalanx only, same machine load, 21:43-22:18
  UTC): in backlog mode 0.75 s gave 141 pods/s and 1 gang seen partly bound against 154
  and 11 with a fixed 384; in arrival mode, where the benchmark's creations share the API
  server, 0.75 s held the bound near 65 and gangs waited for slots (gang latency p50/p99
  28.5/51.2 s) where 1.5 s gave 16.1/27.3 s. Once the benchmark's watcher no longer timed
  bindings late (00:00 UTC, load 5-10 from other work on the machine): backlog at 1.5 s
  134 pods/s, 4 gangs partly bound, bursts up to 3.6 s; at 1.0 s 119 pods/s, 2 gangs,
  bursts up to 2.4 s; arrival at 1.0 s p50/p99 35.7/65.4 s and 5 gangs, at 1.5 s
  33.2/62.3 s and 8 gangs. The default is 1.0 s.
- The target must be above the quickest reply the API server gives (tens of ms when
  idle; bench-5000 on a loaded 2-core machine: about half a second): a target below it
  shrinks the bound to the floor, where the bindings crawl (a first try with 0.5 s: 68
  pods/s against 85 with a fixed 96, and a 128-pod gang sent in rounds over 12 s).
- It starts at a quarter of the ceiling, so the first burst does not find out the API
  server's limit with every gang's bindings at once.

Pure: the binder feeds it reply times, requests in flight and whether gangs wait in line,
and resizes its slots.
"""

from __future__ import annotations

FLOOR = 32  # a bound below this leaves the API server idle between replies
START_SHARE = 4  # start at ceiling / START_SHARE
MAX_SHRINK = 0.75
MAX_GROWTH = 1.15


class InFlightLimit:
    def __init__(self, ceiling: int, target_seconds: float, floor: int = FLOOR) -> None:
        self.ceiling = ceiling
        self.floor = min(floor, ceiling)
        self.target_seconds = target_seconds
        self.limit = max(self.floor, ceiling // START_SHARE)
        self._replies = 0
        self._seconds = 0.0
        self._in_flight = 0
        self._gangs_waited = False

    @property
    def window(self) -> int:
        """Replies per judgement: half the bound, so a decision is made twice per round of
        requests in flight, on enough replies that one slow reply (a pause of the API
        server or of this process) does not swing it: with a quarter of the bound and
        steps of a half and a quarter, the bound swung between 32 and 288 at bench-5000."""
        return max(16, self.limit // 2)

    def observe(self, reply_seconds: float, in_flight: int, gangs_waiting: bool) -> int | None:
        """Record one reply: its time, the requests in flight when it came (itself
        included) and whether a gang was waiting in line for slots then. The new bound
        when a window ends with a change, else None."""
        self._replies += 1
        self._seconds += reply_seconds
        self._in_flight += in_flight
        self._gangs_waited = self._gangs_waited or gangs_waiting
        if self._replies < self.window:
            return None
        new = self._judged(self._seconds / self._replies, self._in_flight / self._replies)
        waited = self._gangs_waited
        self._replies, self._seconds, self._in_flight, self._gangs_waited = 0, 0.0, 0, False
        if new == self.limit or (new > self.limit and not waited):
            return None
        self.limit = new
        return new

    def _judged(self, reply_seconds: float, in_flight: float) -> int:
        """The bound the window asks for: rate x target, within one step of the last."""
        aimed = in_flight / max(reply_seconds, 1e-9) * self.target_seconds
        if reply_seconds > self.target_seconds:
            aimed = max(aimed, self.limit * MAX_SHRINK)
            return max(self.floor, min(self.limit, round(aimed)))
        aimed = min(aimed, self.limit * MAX_GROWTH)
        return min(self.ceiling, max(self.limit + 1, round(aimed)))
