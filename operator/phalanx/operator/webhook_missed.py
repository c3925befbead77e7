"""Events on the pods the pod webhook missed, and on their PodGroups (`webhooks.missed`).

With the webhook on, a waiting pod of a gang Phalanx manages that is neither ours nor
gated was created while the webhook could not be reached. kube-scheduler places it alone;
the user reads why on the pod and on its PodGroup, once per pod (the recorder drops
repeats), and again on the PodGroup when the number of such pods changes.

Finding them reads every pod (about 50 ms for 20,000 pods), so it runs in a worker
thread over the cycle's picture of the cache, at most every `INTERVAL_SECONDS`.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence

from phalanx.operator.cache import Body, object_key
from phalanx.operator.events import Event
from phalanx.operator.writes import Writes
from phalanx.webhooks.missed import Missed, group_message, missed_pods, pod_message

REASON = "WebhookMissed"
INTERVAL_SECONDS = 10.0


class MissedPods:
    def __init__(self, writes: Writes) -> None:
        self._writes = writes
        self._due = 0.0

    async def report(
        self, pods: Mapping[Hashable, Sequence[Body]], groups: Mapping[str, Body], now: float
    ) -> None:
        """`pods`: the cycle's picture of the pod store (its own, not the live one)."""
        if now < self._due:
            return
        self._due = now + INTERVAL_SECONDS
        bodies = [body for entry in pods.values() for body in entry]
        report_missed(self._writes, await asyncio.to_thread(missed_pods, bodies, groups), groups)


def report_missed(writes: Writes, missed: list[Missed], groups: Mapping[str, Body]) -> int:
    """Post the Events; returns how many pods were missed."""
    by_group: dict[str, list[Body]] = defaultdict(list)
    for item in missed:
        writes.event(Event(item.pod, "Warning", REASON, pod_message(item.group), topic=REASON))
        by_group[object_key(item.group)].append(item.pod)
    for key, members in by_group.items():
        writes.event(Event(groups[key], "Warning", REASON, group_message(members),
                           topic=REASON, about=str(len(members))))
    return len(missed)
