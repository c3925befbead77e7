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
- It starts at a quarter of the ceiling unless told where. The binder tells it the
  whole ceiling: timed by the API server's replies (bench.e2e's audit log), the climb
  from a quarter cost the first ~5 s of a 1,000-node backlog at a third of the API
  server's rate, and started whole no gang was seen partly bound (it had been, 9 of 500,
  when the benchmark's watcher still timed the bindings).
- A shrink must pay. Replies are slow for two reasons: this process's own requests, or
  everybody else's (in arrival mode the benchmark's creations and kwok's status writes
  share the API server). Shrinking helps only against the first; against the second it
  only cuts this process's rate: bench-5000 arrival mode, e2e-5000-6 (in git), the bound fell to
  its floor of 32 while replies stayed near a second, up to 1,146 decided pods waited for
  slots and gangs waited p50 17.3 s for them. So every shrink on slow replies is a trial,
  judged by the next window: the part of the reply time that is this process's own
  shows as the reply time following the requests in flight (Little's law again: a
  server busy with our requests alone answers in proportion to them). The window right
  after a step is let pass: most of its replies answer requests sent before the step
  (half the bound per window), so their times say nothing of it. If replies fell by
  at least half the share the requests fell by, at least half their time was ours: the
  shrink stays and the rules above go on. If not, the bound goes back to where it was
  and holds there while replies stay slow; every `PROBE_WINDOWS` windows it tries a step
  again, upwards (while gangs wait) after a shrink that did not pay, downwards after a
  growth that did not, and keeps climbing while each step up costs less than half its
  share in reply time. It settles where this process's part of the reply time is about
  the others' part. A window whose replies moved the other way by more than the step
  (a pause, a burst from others) decides nothing and the step stays, as before; quick
  replies end the hold.

Pure: the binder feeds it reply times, requests in flight and whether gangs wait in line,
and resizes its slots.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

FLOOR = 32  # a bound below this leaves the API server idle between replies
START_SHARE = 4  # start at ceiling / START_SHARE
MAX_SHRINK = 0.75
MAX_GROWTH = 1.15
PROBE_WINDOWS = 3  # windows held after a step that did not pay, before the next try
UNCLEAR_STEP = 0.1  # in flight moved by less than this share: the trial says nothing


class Verdict(Enum):
    PAID = "paid"
    LOST = "lost"
    UNCLEAR = "unclear"


@dataclass(frozen=True)
class Trial:
    """A step of the bound taken while replies were slow, and the window before it."""

    limit: int  # the bound before the step
    in_flight: float
    reply_seconds: float
    settled: bool = False  # a window has passed since the step

    def verdict(self, in_flight: float, reply_seconds: float) -> Verdict:
        """Whether the step paid: replies moved with the requests in flight (at least half
        as much, relatively: at least half their time is this process's) for a shrink;
        less than half as much for a growth."""
        step = in_flight / self.in_flight - 1.0
        if abs(step) < UNCLEAR_STEP:
            return Verdict.UNCLEAR  # too few requests to move: nothing learnt
        moved = reply_seconds / self.reply_seconds - 1.0
        if moved * step < 0 and abs(moved) > abs(step):
            return Verdict.UNCLEAR  # replies moved against the step, more than it: others
        if step < 0:
            return Verdict.PAID if moved <= step / 2 else Verdict.LOST
        return Verdict.PAID if moved < step / 2 else Verdict.LOST


class InFlightLimit:
    def __init__(self, ceiling: int, target_seconds: float, floor: int = FLOOR,
                 start: int | None = None) -> None:
        self.ceiling = ceiling
        self.floor = min(floor, ceiling)
        self.target_seconds = target_seconds
        first = ceiling // START_SHARE if start is None else start
        self.limit = max(self.floor, min(ceiling, first))
        self._replies = 0
        self._seconds = 0.0
        self._in_flight = 0
        self._gangs_waited = False
        self._trial: Trial | None = None
        self._held: int | None = None  # windows until the next try; None: not held
        self._probe_up = True  # the next try's direction while held

    @property
    def window(self) -> int:
        """Replies per judgement: half the bound, so a decision is made twice per round of
        requests in flight, on enough replies that one slow reply (a pause of the API
        server or of this process) does not swing it: with a quarter of the bound and
        steps of a half and a quarter, the bound swung between 32 and 288 at bench-5000."""
        return max(16, self.limit // 2)

    @property
    def held(self) -> bool:
        """Whether the bound holds because shrinking on slow replies did not pay."""
        return self._held is not None

    def observe(self, reply_seconds: float, in_flight: int, gangs_waiting: bool) -> int | None:
        """Record one reply: its time, the requests in flight when it was sent (itself
        included: what it waited behind) and whether a gang was waiting in line for slots
        then. The new bound when a window ends with a change, else None."""
        self._replies += 1
        self._seconds += reply_seconds
        self._in_flight += in_flight
        self._gangs_waited = self._gangs_waited or gangs_waiting
        if self._replies < self.window:
            return None
        reply, out = self._seconds / self._replies, self._in_flight / self._replies
        waited = self._gangs_waited
        self._replies, self._seconds, self._in_flight, self._gangs_waited = 0, 0.0, 0, False
        new = self._next(reply, out, waited)
        if new == self.limit:
            return None
        self.limit = new
        return new

    def _next(self, reply: float, in_flight: float, waited: bool) -> int:
        """The bound after a window of replies `reply` seconds long on average with
        `in_flight` requests out on average."""
        trial, self._trial = self._trial, None
        if reply <= self.target_seconds:
            self._held = None  # quick again: whatever was slow is gone
            new = self._judged(reply, in_flight)
            return new if new < self.limit or waited else self.limit
        if trial is not None and not trial.settled:
            self._trial = replace(trial, settled=True)
            return self.limit  # most replies of this window were asked before the step
        verdict = Verdict.UNCLEAR if trial is None else trial.verdict(in_flight, reply)
        if trial is not None and verdict is Verdict.LOST:
            self._held, self._probe_up = PROBE_WINDOWS, trial.limit > self.limit
            return trial.limit
        if trial is not None and verdict is Verdict.PAID and trial.limit > self.limit:
            self._held = None  # the shrink paid: replies are ours, the target rules
        if self._held is None:
            return self._step(self._judged(reply, in_flight), reply, in_flight)
        return self._probe(reply, in_flight, waited, climbing=verdict is Verdict.PAID)

    def _probe(self, reply: float, in_flight: float, waited: bool, climbing: bool) -> int:
        """While held: the next try when its windows are up (at once while climbing pays)."""
        assert self._held is not None
        if not climbing and self._held > 0:
            self._held -= 1
            return self.limit
        self._held = 0
        if self._probe_up:
            if not waited:
                return self.limit  # nothing waits: a higher bound would bring nothing
            return self._step(self._bounded(self.limit * MAX_GROWTH), reply, in_flight)
        return self._step(self._bounded(self.limit * MAX_SHRINK), reply, in_flight)

    def _step(self, new: int, reply: float, in_flight: float) -> int:
        """Take a step on slow replies as a trial for the next window to judge."""
        if new != self.limit:
            self._trial = Trial(self.limit, in_flight, reply)
        return new

    def _judged(self, reply_seconds: float, in_flight: float) -> int:
        """The bound the window asks for: rate x target, within one step of the last."""
        aimed = in_flight / max(reply_seconds, 1e-9) * self.target_seconds
        if reply_seconds > self.target_seconds:
            return self._bounded(min(max(aimed, self.limit * MAX_SHRINK), self.limit))
        return self._bounded(max(min(aimed, self.limit * MAX_GROWTH), self.limit + 1))

    def _bounded(self, aimed: float) -> int:
        """`aimed` rounded, between the floor and the ceiling; a step up is at least one."""
        new = round(aimed)
        if aimed > self.limit:
            new = max(new, self.limit + 1)
        return max(self.floor, min(self.ceiling, new))
