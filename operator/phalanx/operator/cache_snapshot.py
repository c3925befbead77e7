"""Cache -> the core's snapshot: the objects as parsed in the cache, assumed pods overlaid.

Every object is parsed once per version in the cache (`parsed.py`); a cycle only picks
and overlays the parsed forms and assembles them. Pending pods the operator will not
place in its mode, or outside its namespaces, are left out, so the core never plans what
the writer would not write. Pods being bound show on their nodes (`assumed.py`), pods
being evicted as terminating (`evictions.py`), groups as holding what the last cycle
decided for them (`nominations.py`). The groups' timeout backoffs and when partly placed
gangs were first seen so (the last cycle's decisions) and the pods whose eviction was
refused lately ride along: the core decides who waits, who else is evicted and which
partial gang is released.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Iterator, Mapping

from phalanx.config.settings import Mode
from phalanx.core.backoff import Backoff
from phalanx.core.errors import InvalidObject
from phalanx.core.model import PodInfo
from phalanx.core.names import GANG_GATE, SCHEDULER_NAME, GroupKey
from phalanx.core.parse.objects import assemble_snapshot
from phalanx.core.snapshot import Snapshot
from phalanx.operator.assumed import AssumedPods
from phalanx.operator.cache import Body, ClusterCache, Kind
from phalanx.operator.evictions import EvictionBook
from phalanx.operator.nominations import NominationBook


def visible(pod: PodInfo, mode: Mode, namespaces: Collection[str] = ()) -> bool:
    """Bound pods always (they use capacity); pending ones only if we will place them."""
    if pod.node_name:
        return True
    if namespaces and pod.namespace not in namespaces:
        return False
    if GANG_GATE in pod.scheduling_gates:
        return mode.ungates
    if pod.scheduler_name == SCHEDULER_NAME:
        return mode.binds
    return True


@dataclasses.dataclass(frozen=True)
class Unseen:
    """Writes of this process the watch may not show yet, at `now`: pods being evicted
    (shown leaving) and the holds decided last cycle (shown in status.nominated)."""

    evicting: EvictionBook
    nominations: NominationBook
    now: float


def parsed_objects(
    cache: ClusterCache,
    assumed: AssumedPods,
    mode: Mode,
    namespaces: Collection[str] = (),
    pending_groups: Iterable[Body] = (),
    unseen: Unseen | None = None,
) -> list[object]:
    """The parsed objects the core is shown (InvalidObjects among them).
    `pending_groups`: PodGroups of automatic gangs being created, counted already."""
    shown: list[object] = []
    for kind in (Kind.NODE, Kind.QUEUE, Kind.NETWORK_TOPOLOGY, Kind.PRIORITY_CLASS):
        shown += (parsed for _, parsed in cache.parsed(kind))
    shown += _pods(cache, assumed, mode, namespaces, unseen)
    shown += _groups(cache, namespaces, pending_groups, unseen)
    return shown


def _pods(cache: ClusterCache, assumed: AssumedPods, mode: Mode, namespaces: Collection[str],
          unseen: Unseen | None) -> Iterator[object]:
    for _, pod in cache.parsed(Kind.POD):
        if not isinstance(pod, PodInfo):
            yield pod  # an InvalidObject
        elif visible(pod, mode, namespaces):
            pod = assumed.shown(pod)
            yield unseen.evicting.shown(pod) if unseen is not None else pod


def _groups(cache: ClusterCache, namespaces: Collection[str], pending_groups: Iterable[Body],
            unseen: Unseen | None) -> Iterator[object]:
    entries = [*cache.parsed(Kind.POD_GROUP), *cache.parsed(Kind.UPSTREAM_POD_GROUP),
               *((body, cache.parse(body)) for body in pending_groups)]
    for body, group in entries:
        if namespaces and body.get("metadata", {}).get("namespace") not in namespaces:
            continue
        if unseen is not None:
            nominated = unseen.nominations.shown(body)
            if nominated is not body:
                group = cache.parse(nominated)
        yield group


def take_snapshot(
    cache: ClusterCache,
    assumed: AssumedPods,
    mode: Mode,
    namespaces: Collection[str] = (),
    backoffs: Mapping[GroupKey, Backoff] | None = None,
    pending_groups: Iterable[Body] = (),
    unseen: Unseen | None = None,
    partial_since: Mapping[GroupKey, float] | None = None,
) -> Snapshot:
    parsed = parsed_objects(cache, assumed, mode, namespaces, pending_groups, unseen)
    invalid = [item for item in parsed if isinstance(item, InvalidObject)]
    refused = unseen.evicting.refused_lately() if unseen is not None else ()
    return assemble_snapshot((item for item in parsed if not isinstance(item, InvalidObject)),
                             invalid, backoffs, refused, partial_since)
