"""Cache -> the core's snapshot: the objects as listed, assumed pods overlaid.

Pending pods the operator will not place in its mode, or outside its namespaces, are
left out, so the core never plans what the writer would not write. Pods being evicted
show as terminating (`evictions.py`), groups as holding what the last cycle decided for
them (`nominations.py`). The groups' timeout backoffs (the last cycle's
decisions) and the pods whose eviction was refused lately ride along: the core decides
who waits and who else is evicted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from phalanx.config.settings import Mode
from phalanx.core.backoff import Backoff
from phalanx.core.names import GroupKey
from phalanx.core.parse import snapshot_from_objects
from phalanx.core.parse.objects import PARSERS, Parser
from phalanx.core.snapshot import Snapshot
from phalanx.operator.assumed import AssumedPods
from phalanx.operator.cache import Body, ClusterCache, Kind
from phalanx.operator.evictions import EvictionBook
from phalanx.operator.nominations import NominationBook
from phalanx.operator.pods import is_bound, is_gated, wants_phalanx


def visible(pod: Body, mode: Mode, namespaces: Collection[str] = ()) -> bool:
    """Bound pods always (they use capacity); pending ones only if we will place them."""
    if is_bound(pod):
        return True
    if namespaces and pod.get("metadata", {}).get("namespace") not in namespaces:
        return False
    if is_gated(pod):
        return mode.ungates
    if wants_phalanx(pod):
        return mode.binds
    return True


@dataclasses.dataclass(frozen=True)
class Unseen:
    """Writes of this process the watch may not show yet, at `now`: pods being evicted
    (shown leaving) and the holds decided last cycle (shown in status.nominated)."""

    evicting: EvictionBook
    nominations: NominationBook
    now: float


def snapshot_objects(
    cache: ClusterCache,
    assumed: AssumedPods,
    mode: Mode,
    namespaces: Collection[str] = (),
    pending_groups: Iterable[Body] = (),
    unseen: Unseen | None = None,
) -> list[Body]:
    """`pending_groups`: PodGroups of automatic gangs being created, counted already."""
    pods: Iterable[Body] = (
        pod for pod in cache.objects(Kind.POD) if visible(pod, mode, namespaces)
    )
    groups: Iterable[Body] = (
        g
        for kind in (Kind.POD_GROUP, Kind.UPSTREAM_POD_GROUP)
        for g in (*cache.objects(kind), *(pending_groups if kind is Kind.POD_GROUP else ()))
        if not namespaces or g.get("metadata", {}).get("namespace") in namespaces
    )
    if unseen is not None:
        pods = unseen.evicting.overlay(pods, unseen.now)
        groups = unseen.nominations.overlay(groups)
    return [
        *cache.objects(Kind.NODE),
        *assumed.overlay(pods),
        *groups,
        *cache.objects(Kind.QUEUE),
        *cache.objects(Kind.NETWORK_TOPOLOGY),
        *cache.objects(Kind.PRIORITY_CLASS),
    ]


class ParseMemo:
    """Parsed objects by identity and resourceVersion, kept from one cycle to the next.

    Between two cycles a watch changes a handful of objects; parsing thousands of
    unchanged pods again every cycle was the largest cost of taking a snapshot. The key
    includes nodeName and the gates, which the assumed-pod overlay changes without a new
    resourceVersion, and deletionTimestamp, which the eviction overlay adds. Entries not
    used in a cycle are dropped at the next `rotate()`.
    """

    def __init__(self) -> None:
        self._previous: dict[tuple[Any, ...], object] = {}
        self._current: dict[tuple[Any, ...], object] = {}
        self.parsers: dict[str, Parser] = {k: self._memo(k, f) for k, f in PARSERS.items()}

    def rotate(self) -> None:
        self._previous, self._current = self._current, {}

    def _memo(self, kind: str, parse: Parser) -> Parser:
        def parse_once(obj: Mapping[str, Any]) -> object:
            key = _identity(kind, obj)
            if key is None:
                return parse(obj)
            parsed = self._current.get(key)
            if parsed is None:
                parsed = self._previous.get(key)
                if parsed is None:
                    parsed = parse(obj)
                self._current[key] = parsed
            return parsed

        return parse_once


def _identity(kind: str, obj: Mapping[str, Any]) -> tuple[Any, ...] | None:
    meta = obj.get("metadata") or {}
    version = meta.get("resourceVersion")
    if not version:
        return None  # hand-made objects (tests, files): no identity to trust
    spec = obj.get("spec") or {}
    gates = tuple(g.get("name") for g in spec.get("schedulingGates") or [] if isinstance(g, dict))
    return (kind, meta.get("namespace"), meta.get("name"), meta.get("uid"), version,
            spec.get("nodeName"), gates, meta.get("deletionTimestamp"))


def take_snapshot(
    cache: ClusterCache,
    assumed: AssumedPods,
    mode: Mode,
    namespaces: Collection[str] = (),
    memo: ParseMemo | None = None,
    backoffs: Mapping[GroupKey, Backoff] | None = None,
    pending_groups: Iterable[Body] = (),
    unseen: Unseen | None = None,
) -> Snapshot:
    objects = snapshot_objects(cache, assumed, mode, namespaces, pending_groups, unseen)
    parsers: Mapping[str, Callable[[Mapping[str, Any]], object]] = (
        memo.parsers if memo is not None else PARSERS
    )
    refused = unseen.evicting.refused_lately() if unseen is not None else ()
    return snapshot_from_objects(objects, strict=False, parsers=parsers, backoffs=backoffs,
                                 eviction_refused=refused)
