"""Requests in flight, bounded, handed out a gang at a time; a large gang's burst goes alone.

A gang's pods are bound one request each (Kubernetes has no binding of several pods at
once), so "all or nothing" can only be approached by writing them as one burst, as short
as the API server allows. With a slot per pod (a plain semaphore) a gang's requests
queue behind, and interleave with, other gangs' requests: a 128-pod gang at 32 in flight
and 55 bindings per second took over 2 s from its first binding to its last (bench-5000:
43 gangs seen partly bound). The rule here:

- Gangs are served in the order they ask; a gang that waits holds back every later one,
  so none waits for ever (a burst ends once its requests are answered, and each request
  has a timeout).
- A gang takes a slot per pod, all at once (at most `limit`); each slot goes back when
  it has no request of its gang left to send.
- A large gang (at least `alone_from` pods, half the limit by default; the binder gives
  half the configured bound) goes alone, and so does any gang with more pods than the
  limit (it could not have a slot per pod): it starts once no other gang has a request
  in flight, and no later gang starts before its last request is answered. Its
  bindings then share the API server with nothing else of ours: at ~85 bindings per
  second a 128-pod burst takes 1.5 s alone, and a later gang sent behind its tail only
  lengthened it. Alone, it sends every pod at once,
  up to the `ceiling` (the configured bound), even above the current limit: sent
  through fewer slots, its pods went out in rounds, each as long as a reply
  (bench-5000: 128 pods through 16 slots, 12 s).

Small gangs keep sharing the slots, so the API server is never left waiting on one.
How many slots there are follows the API server's replies (`in_flight_limit.py`); a new
limit applies from the next gang to start.

Going alone costs the pipe: it drains before the gang starts and waits on the gang's last
replies. Judged by half the *current* limit, which starts at a quarter of the bound and
climbs, every 64-pod gang of bench-1000 went alone, one after another, for the first
seconds of a backlog (limit 96-128: about 100 pods/s, where the ceiling contender bound
450); judged by half the bound, a gang that fits the limit shares it, its pods still sent
at once (bench-1000 backlog, Phalanx alone, alternating runs on a loaded machine: 296 and
256 pods/s, 0 gangs seen partly bound, against 200, 229 and 289).
"""

from __future__ import annotations

import asyncio
import collections


class Burst:
    """The slots one gang holds: `senders` requests may be in flight at once, each sender
    from the moment it has its slot (`slot`). A gang that shares the slots starts with
    those free and is owed the rest (`owed`), handed to it first as they come back."""

    def __init__(self, slots: GangSlots, senders: int, alone: bool, held: int,
                 owed: int = 0) -> None:
        self._slots = slots
        self.senders = senders
        self.alone = alone
        self._held = held
        self.owed = owed
        self._turns = asyncio.Semaphore(senders if alone else held)

    async def slot(self) -> None:
        """Wait for this sender's slot (at once when the gang goes alone)."""
        await self._turns.acquire()

    def grant(self, count: int) -> None:
        """`count` more of the slots owed."""
        self._held += count
        self.owed -= count
        for _ in range(count):
            self._turns.release()

    def sender_done(self) -> None:
        """A sender has nothing left to send: its slot goes back at once, unless the
        gang goes alone (then every slot goes back at `end`)."""
        if not self.alone and self._held:
            self._held -= 1
            self._slots.give(1)

    def end(self) -> None:
        """Every request of the gang is answered (or abandoned): what is left goes back,
        and a gang cut short is owed nothing more."""
        held, self._held = self._held, 0
        self.owed = 0
        if self.alone and self._slots.alone is self:
            self._slots.alone = None
        filling = self._slots.filling is self
        if filling:
            self._slots.filling = None
        if held or self.alone or filling:
            self._slots.give(held)


class GangSlots:
    """`limit` slots, resized while gangs hold them (`resize`): `free` is always the
    limit less what bursts hold, so it may fall below zero after a shrink, and no gang
    starts until enough comes back."""

    def __init__(self, limit: int, alone_from: int | None = None,
                 ceiling: int | None = None) -> None:
        self.limit = limit
        self.ceiling = max(limit, ceiling or limit)  # a gang going alone sends this many
        self._alone_from = alone_from
        self.free = limit
        self.alone: Burst | None = None  # the burst going alone, while it is in flight
        self.filling: Burst | None = None  # the shared burst still owed slots
        self._waiting: collections.deque[tuple[int, asyncio.Future[Burst]]] = collections.deque()

    @property
    def alone_from(self) -> int:
        return self._alone_from if self._alone_from is not None else max(1, self.limit // 2)

    @property
    def in_line(self) -> int:
        """Gangs waiting for their turn or their slots now (more slots would serve them
        sooner)."""
        return len(self._waiting) + (self.filling is not None)

    def goes_alone(self, pods: int) -> bool:
        return pods >= self.alone_from or pods > self.limit

    def resize(self, limit: int) -> None:
        """A new bound on requests in flight, from the next gang on; bursts in flight
        keep what they hold (a gang owed slots, what it is owed) and give it back as
        before."""
        self.free += limit - self.limit
        self.limit = limit
        self._wake()

    async def take(self, pods: int) -> Burst:
        """Wait for the turn of a gang of `pods` pods (see the module's rule)."""
        if not self._waiting:
            burst = self._granted(pods)
            if burst is not None:
                return burst
        turn: asyncio.Future[Burst] = asyncio.get_running_loop().create_future()
        self._waiting.append((pods, turn))
        try:
            return await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                turn.result().end()  # handed over just as the gang was cancelled
            else:
                self._waiting.remove((pods, turn))
                self._wake()
            raise

    def give(self, count: int = 1) -> None:
        self.free += count
        self._wake()

    def _granted(self, pods: int) -> Burst | None:
        """The gang's burst if its turn can start now: no gang goes alone or is owed
        slots, and a slot is free (every slot, if it goes alone); the limit is read now,
        not when it asked."""
        if self.alone is not None or self.filling is not None:
            return None
        alone = self.goes_alone(pods)
        count = self.limit if alone else max(1, min(pods, self.limit))
        if self.free < (count if alone else 1):
            return None
        held = min(self.free, count)
        self.free -= held
        senders = min(pods, self.ceiling if alone else self.limit)
        burst = Burst(self, max(1, senders), alone, held, owed=count - held)
        if alone:
            self.alone = burst
        elif burst.owed:
            self.filling = burst
        return burst

    def _feed(self) -> None:
        """Slots come back to the gang owed some first."""
        burst = self.filling
        if burst is None or self.free <= 0:
            return
        count = min(self.free, burst.owed)
        self.free -= count
        burst.grant(count)
        if not burst.owed:
            self.filling = None

    def _wake(self) -> None:
        self._feed()
        while self._waiting:
            burst = self._granted(self._waiting[0][0])
            if burst is None:
                return
            _, turn = self._waiting.popleft()
            turn.set_result(burst)
