"""Events on the pods the pod webhook missed, and on their PodGroups (`webhooks.missed`).

With the webhook on, a waiting pod of a gang Phalanx manages that is neither ours nor
gated was created while the webhook could not be reached. kube-scheduler places it alone;
the user reads why on the pod and on its PodGroup, once per pod (the recorder drops
repeats), and again on the PodGroup when the number of such pods changes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from phalanx.operator.cache import Body, object_key
from phalanx.operator.events import Event
from phalanx.operator.writes import Writes
from phalanx.webhooks.missed import group_message, missed_pods, pod_message

REASON = "WebhookMissed"


def report_missed(writes: Writes, pods: Iterable[Body], groups: Mapping[str, Body]) -> int:
    """Post the Events; returns how many pods were missed."""
    by_group: dict[str, list[Body]] = defaultdict(list)
    missed = missed_pods(pods, groups)
    for item in missed:
        writes.event(Event(item.pod, "Warning", REASON, pod_message(item.group), topic=REASON))
        by_group[object_key(item.group)].append(item.pod)
    for key, members in by_group.items():
        writes.event(Event(groups[key], "Warning", REASON, group_message(members),
                           topic=REASON, about=str(len(members))))
    return len(missed)
