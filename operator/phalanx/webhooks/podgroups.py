"""What a PodGroup's schema cannot refuse: a queue that does not exist (pure).

Refused by default, naming `spec.queue`, so a typo is seen at apply time and not as a
gang that waits forever. GitOps tools apply a PodGroup and its Queue in no fixed order:
with `allow_unknown` the apply succeeds with a warning instead, and the PodGroup waits
(its condition says the queue is missing) until the Queue is created. An update is
judged only when it changes the queue, so a PodGroup whose queue was deleted later can
still be edited (or lose its finalizers).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from phalanx.core.model.names import DEFAULT_QUEUE
from phalanx.webhooks.queues import Verdict


def validate_podgroup(
    new: Mapping[str, Any],
    old: Mapping[str, Any] | None,
    queues: Collection[str],
    allow_unknown: bool,
) -> Verdict:
    """`queues`: the names of the Queues that exist (and `default` when the operator
    creates it at startup)."""
    queue = queue_of(new)
    if old is not None and queue_of(old) == queue:
        return Verdict()
    if queue in queues:
        return Verdict()
    message = f"spec.queue: queue {queue} does not exist"
    if allow_unknown:
        return Verdict(warnings=(f"{message} (yet); the group waits until it does",))
    return Verdict(f"{message} (create the Queue first, or name one of: "
                   f"{', '.join(sorted(queues)) or 'none exists'})")


def queue_of(obj: Mapping[str, Any]) -> str:
    spec = obj.get("spec")
    queue = spec.get("queue") if isinstance(spec, Mapping) else None
    return str(queue) if queue else DEFAULT_QUEUE  # the schema's default
