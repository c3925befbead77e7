"""Room held for one group: freed by evictions (Preempting) or reserved against
starvation (Reserved). While held, no group of lower or equal priority is placed there.

It is an input as well as an output: the shell records it in the PodGroup's
`status.nominated`, so a hold survives an operator restart or a leader change.
Times are in the clock `run_cycle` is given as `now` (seconds).
"""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.core.model.names import NodeName

PREEMPTING = "Preempting"
RESERVED = "Reserved"


@dataclass(frozen=True, slots=True)
class Nomination:
    """`nodes` held for the group; `reason` PREEMPTING or RESERVED; `since` when the
    hold was first taken; after `expires` it is released. `start`: for a reservation,
    when the group is expected to start there, as first worked out from the runtime
    limits of the work in its way (None: unknown, some of it has no limit); a group
    of lower priority is let in (backfilled) only if its own limit ends by then."""

    nodes: tuple[NodeName, ...]
    reason: str
    since: float
    expires: float
    start: float | None = None

    def live(self, now: float) -> bool:
        return now < self.expires
