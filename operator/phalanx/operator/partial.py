"""Partial gangs: a gang left short of its minMember after a placement write failed.

A binding is final, so pods bound before a sibling's write failed hold their GPUs while
the rest waits. The next cycles try to place the missing pods; if the gang is still
partial past its deadline (its scheduleTimeoutSeconds, at least `grace_seconds`), its
placed pods are deleted when a controller will recreate them (so the whole gang starts
again together), or left running with a Warning when nothing would recreate them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from phalanx.core.node_loss import LostNode, lost_message
from phalanx.core.result import GroupDecision
from phalanx.operator.cache import Body
from phalanx.operator.compose import WAITING_PHASES
from phalanx.operator.events import Event
from phalanx.operator.pods import has_controller, pod_key


@dataclasses.dataclass(frozen=True)
class Release:
    """What to do about a partial gang past its deadline: delete `pods` (none: leave
    them) and say so with `event`."""

    pods: tuple[str, ...]
    event: Event


def is_partial(decision: GroupDecision, group: Body) -> bool:
    """Some but not all of the gang's minimum is placed and none finished: a gang not yet
    whole, or a running one (Unknown) that lost pods with a failed node."""
    phase = (group.get("status") or {}).get("phase", "Pending")
    finished = decision.counts.succeeded + decision.counts.failed
    return (0 < decision.placed < decision.min_member and not finished
            and phase in (*WAITING_PHASES, "Unknown"))


class PartialGangs:
    def __init__(self, grace_seconds: float) -> None:
        self._grace = grace_seconds
        self._since: dict[str, float] = {}  # group -> when it was first seen partial

    def check(
        self, decision: GroupDecision, group: Body, placed: Sequence[Body], now: float,
        lost: tuple[LostNode, ...] = (), timeout: int | None = None,
    ) -> Release | None:
        """The release due for the group this cycle, if any; `placed` are its unfinished
        pods on nodes, `lost` the failed nodes that took the rest (named in the Event),
        `timeout` the group's scheduleTimeoutSeconds (Phalanx's PodGroup, or the
        annotation on Kubernetes' own), `group` the object the Event is about."""
        key = decision.group
        if not is_partial(decision, group):
            self._since.pop(key, None)
            return None
        since = self._since.setdefault(key, now)
        if now - since < max(timeout or 0, self._grace):
            return None
        if placed and all(has_controller(p) for p in placed):
            self._since.pop(key, None)
            cause = f" ({lost_message(lost)} failed)" if lost else ""
            return Release(tuple(pod_key(p) for p in placed), Event(
                group, "Warning", "PartialGangReleased",
                f"{len(placed)} of {decision.min_member} pods were placed and the rest could "
                f"not be{cause}; deleted the placed pods so their controller recreates them",
                topic="partial"))
        return Release((), Event(
            group, "Warning", "PartialGang",
            f"{len(placed)} of {decision.min_member} pods are placed and the rest cannot be; "
            "the placed pods have no controller and are left running", topic="partial"))

    def forget(self, live: set[str]) -> None:
        for key in [k for k in self._since if k not in live]:
            del self._since[key]
