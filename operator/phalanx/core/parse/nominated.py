"""`status.nominated` -> Nomination: the room held for a group, written by the operator."""

from __future__ import annotations

from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.names import NodeName
from phalanx.core.model.nomination import PREEMPTING, RESERVED, Nomination
from phalanx.core.parse.fields import Reader


def read_nomination(reader: Reader) -> Nomination | None:
    """The hold recorded in `status.nominated`. Phalanx writes it, not the user, so a
    malformed one is dropped (the hold is re-decided) instead of failing the group.
    Kubernetes' own PodGroup has no such field: the operator shows it one in-process
    (operator/nominations.py), so its hold lasts while the operator does."""
    try:
        held = reader.mapping("status.nominated")
        nodes = held.get("nodes")
        reason = held.get("reason")
        since = reader.moment("status.nominated.since", held)
        expires = reader.moment("status.nominated.expires", held)
        start = reader.moment("status.nominated.start", held)
    except InvalidObject:
        return None
    if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
        return None
    if reason not in (PREEMPTING, RESERVED) or since is None or expires is None:
        return None
    nodes_held = tuple(NodeName(n) for n in sorted(set(nodes)))
    return Nomination(nodes_held, reason, since, expires, start)
