"""Cache -> the core's snapshot: the objects as listed, assumed pods overlaid.

Pending pods the operator will not place in its mode are left out, so the core never
plans what the writer would not write. Groups in timeout backoff are left out too.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from phalanx.core.parse import snapshot_from_objects
from phalanx.core.snapshot import Snapshot
from phalanx.operator.assumed import AssumedPods
from phalanx.operator.cache import Body, ClusterCache, Kind, object_key
from phalanx.operator.pods import group_key_of, is_bound, is_gated, wants_phalanx
from phalanx.operator.settings import Mode


def visible(
    pod: Body, mode: Mode, hidden_groups: Collection[str], namespaces: Collection[str] = ()
) -> bool:
    """Bound pods always (they use capacity); pending ones only if we will place them."""
    if is_bound(pod):
        return True
    if group_key_of(pod) in hidden_groups:
        return False
    if namespaces and pod.get("metadata", {}).get("namespace") not in namespaces:
        return False
    if is_gated(pod):
        return mode.ungates
    if wants_phalanx(pod):
        return mode.binds
    return True


def snapshot_objects(
    cache: ClusterCache,
    assumed: AssumedPods,
    mode: Mode,
    hidden_groups: Collection[str] = (),
    namespaces: Collection[str] = (),
) -> list[Body]:
    pods: Iterable[Body] = (
        pod
        for pod in cache.objects(Kind.POD)
        if visible(pod, mode, hidden_groups, namespaces)
    )
    groups = (
        g
        for g in cache.objects(Kind.POD_GROUP)
        if object_key(g) not in hidden_groups
        and (not namespaces or g.get("metadata", {}).get("namespace") in namespaces)
    )
    return [
        *cache.objects(Kind.NODE),
        *assumed.overlay(pods),
        *groups,
        *cache.objects(Kind.QUEUE),
        *cache.objects(Kind.NETWORK_TOPOLOGY),
        *cache.objects(Kind.PRIORITY_CLASS),
    ]


def take_snapshot(
    cache: ClusterCache,
    assumed: AssumedPods,
    mode: Mode,
    hidden_groups: Collection[str] = (),
    namespaces: Collection[str] = (),
) -> Snapshot:
    objects = snapshot_objects(cache, assumed, mode, hidden_groups, namespaces)
    return snapshot_from_objects(objects, strict=False)
