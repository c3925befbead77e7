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

Three steps, so the operator's event loop only does the cheap middle one: the stores are
copied (`ClusterCache.view`) and parsed in a worker thread (`parse_view`), this process's
writes are overlaid on the loop, where their books live (`parsed_objects`), and the
snapshot is assembled in the thread that then runs the core (`assemble`). At bench-5000
the snapshot on the loop took 0.8 s a cycle (3.3 s at most) in arrival mode, and every
binding reply and watch event waited for it.
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
from phalanx.operator.cache import Body, ClusterCache, Entry, Kind, View
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


# The kinds the core is shown, in the order they are handed to it.
SHOWN_KINDS = (Kind.NODE, Kind.QUEUE, Kind.NETWORK_TOPOLOGY, Kind.PRIORITY_CLASS, Kind.POD,
               Kind.POD_GROUP, Kind.UPSTREAM_POD_GROUP)
ParsedView = Mapping[Kind, list[Entry]]


def parse_view(cache: ClusterCache, view: View) -> ParsedView:
    """Every object the core may be shown, parsed (only what changed since the last
    cycle). Reads a view and the parsed forms' memory, nothing the event loop changes,
    so the operator runs it in a worker thread: after bindings and arrivals, parsing is
    most of a snapshot's cost (`python -m bench.snapshot`)."""
    return {kind: cache.parsed_in(view, kind) for kind in SHOWN_KINDS}


def parsed_objects(
    parsed: ParsedView,
    cache: ClusterCache,
    assumed: AssumedPods,
    mode: Mode,
    namespaces: Collection[str] = (),
    pending_groups: Iterable[Body] = (),
    unseen: Unseen | None = None,
) -> list[object]:
    """The parsed objects the core is shown (InvalidObjects among them), with this
    process's writes overlaid: on the event loop, where those books are kept.
    `pending_groups`: PodGroups of automatic gangs being created, counted already."""
    shown: list[object] = []
    for kind in (Kind.NODE, Kind.QUEUE, Kind.NETWORK_TOPOLOGY, Kind.PRIORITY_CLASS):
        shown += (item for _, item in parsed[kind])
    shown += _pods(parsed[Kind.POD], assumed, mode, namespaces, unseen)
    shown += _groups(parsed, cache, namespaces, pending_groups, unseen)
    return shown


def _pods(entries: Iterable[Entry], assumed: AssumedPods, mode: Mode,
          namespaces: Collection[str], unseen: Unseen | None) -> Iterator[object]:
    for _, pod in entries:
        if not isinstance(pod, PodInfo):
            yield pod  # an InvalidObject
        elif visible(pod, mode, namespaces):
            pod = assumed.shown(pod)
            yield unseen.evicting.shown(pod) if unseen is not None else pod


def _groups(parsed: ParsedView, cache: ClusterCache, namespaces: Collection[str],
            pending_groups: Iterable[Body], unseen: Unseen | None) -> Iterator[object]:
    entries = [*parsed[Kind.POD_GROUP], *parsed[Kind.UPSTREAM_POD_GROUP],
               *((body, cache.parse(body)) for body in pending_groups)]
    for body, group in entries:
        if namespaces and body.get("metadata", {}).get("namespace") not in namespaces:
            continue
        if unseen is not None:
            nominated = unseen.nominations.shown(body)
            if nominated is not body:
                group = cache.parse(nominated)
        yield group


def assemble(
    shown: Iterable[object],
    backoffs: Mapping[GroupKey, Backoff] | None = None,
    refused: Collection[str] = (),
    partial_since: Mapping[GroupKey, float] | None = None,
) -> Snapshot:
    """The core's snapshot of the shown objects (the invalid ones set apart); pure, so
    the operator builds it in the worker thread that runs the core."""
    shown = list(shown)
    invalid = [item for item in shown if isinstance(item, InvalidObject)]
    return assemble_snapshot((item for item in shown if not isinstance(item, InvalidObject)),
                             invalid, backoffs, refused, partial_since)


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
    """The three steps in a row, on the caller's thread (tests and tools)."""
    parsed = parse_view(cache, cache.view())
    shown = parsed_objects(parsed, cache, assumed, mode, namespaces, pending_groups, unseen)
    refused = unseen.evicting.refused_lately() if unseen is not None else ()
    return assemble(shown, backoffs, refused, partial_since)
