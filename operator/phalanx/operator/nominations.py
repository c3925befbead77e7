"""The holds the core decided last cycle, shown to it until the PodGroups show them.

A hold (`GroupDecision.nomination`) is state the core needs from one cycle to the next;
the PodGroup carries it in `status.nominated`, so it survives a restart. But the status
write lands in the background and the watch shows it later still: a cycle run in between
would see a preemptor without its hold, and the core starts no new hold for a gang that
only waits for terminating pods, so the room would be lost to others. Until the object
shows what was decided, the group is shown to the core as it will be once the write
lands, exactly as assumed pods are shown on their nodes.
"""

from __future__ import annotations

from typing import Any

from phalanx.core.model.result import CycleResult
from phalanx.operator.cache import Body, object_key
from phalanx.operator.compose import differs, nominated_status


class NominationBook:
    def __init__(self) -> None:
        self._decided: dict[str, dict[str, Any] | None] = {}  # group -> status.nominated

    def decided(self, result: CycleResult) -> None:
        """Remember the holds of every group the cycle decided for (not those it held back)."""
        self._decided = {d.group: nominated_status(d.nomination)
                         for d in result.groups if not d.implicit and not d.held}

    def shown(self, group: Body) -> Body:
        """The group as the core should see it: `group` itself, or a copy holding what
        was decided for it if the object does not show that yet."""
        key = object_key(group)
        if key not in self._decided:
            return group
        decided = self._decided[key]
        shown = (group.get("status") or {}).get("nominated")
        if not differs({"nominated": decided}, {"nominated": shown}):
            return group
        status = {**(group.get("status") or {}), "nominated": decided}
        return {**group, "status": status}
