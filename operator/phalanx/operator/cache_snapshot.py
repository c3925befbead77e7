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
binding reply and watch event waited for it. `group_pods` goes the other way, from a
group in the snapshot back to its pods' cached bodies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence

from phalanx.config.settings import Mode
from phalanx.core.model.backoff import Backoff
from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.inputs import PodInfo
from phalanx.core.model.names import GANG_GATE, SCHEDULER_NAME, GroupKey
from phalanx.core.parse.objects import assemble_snapshot
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.snapshot.picture import Snapshot
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


# The kinds the core is shown as the cache parsed them (pods and groups: see `ParsedView`);
# the DRA kinds are empty stores on a cluster that does not serve resource.k8s.io/v1.
PLAIN_KINDS = (Kind.NODE, Kind.QUEUE, Kind.NETWORK_TOPOLOGY, Kind.PRIORITY_CLASS,
               Kind.RESOURCE_SLICE, Kind.DEVICE_CLASS, Kind.RESOURCE_CLAIM, Kind.CLAIM_TEMPLATE)
GROUP_KINDS = (Kind.POD_GROUP, Kind.UPSTREAM_POD_GROUP, Kind.UPSTREAM_COMPOSITE)


@dataclasses.dataclass(frozen=True)
class ParsedView:
    """A view parsed for the core, as the worker thread hands it to the event loop.

    `pods`: the visible ones (`visible`), in the stores' order; `place`: where each pod
    key first is in `pods`, and `repeated`, the places of any later pod of the same key,
    so the loop's overlay finds the few pods this process wrote without going over all
    of them (at bench-5000 going over 20,870 pods was 16 ms of the loop's CPU a cycle).
    `others`: nodes, queues, topologies, priority classes and invalid pods; `groups`:
    both kinds of PodGroup in the namespaces, with their bodies.
    """

    others: list[object]
    pods: list[PodInfo]
    place: dict[str, int]
    repeated: tuple[int, ...]
    groups: list[Entry]


def parse_view(cache: ClusterCache, view: View, mode: Mode,
               namespaces: Collection[str] = ()) -> ParsedView:
    """Every object the core may be shown, parsed (only what changed since the last
    cycle), the pods it may not see left out. Reads a view and the parsed forms' memory,
    nothing the event loop changes, so the operator runs it in a worker thread: after
    bindings and arrivals, parsing is most of a snapshot's cost (`python -m bench.e2e.snapshot`)."""
    others: list[object] = []
    for kind in PLAIN_KINDS:
        others += (item for _, item in cache.parsed_in(view, kind))
    pods: list[PodInfo] = []
    for _, pod in cache.parsed_in(view, Kind.POD):
        if not isinstance(pod, PodInfo):
            others.append(pod)  # an InvalidObject
        elif visible(pod, mode, namespaces):
            pods.append(pod)
    place: dict[str, int] = {}
    repeated = tuple(at for at, pod in enumerate(pods) if place.setdefault(pod.key, at) != at)
    groups = [entry for kind in GROUP_KINDS for entry in cache.parsed_in(view, kind)
              if _in(entry[0], namespaces)]
    return ParsedView(others, pods, place, repeated, groups)


def _in(body: Body, namespaces: Collection[str]) -> bool:
    return not namespaces or body.get("metadata", {}).get("namespace") in namespaces


@dataclasses.dataclass(frozen=True)
class Shown:
    """What the core is shown: a parsed view and the event loop's overlay of this
    process's writes on it (`pods`: by their place in the view's pods)."""

    parsed: ParsedView
    pods: Mapping[int, PodInfo]
    groups: list[object]

    def objects(self) -> list[object]:
        """The parsed objects with the overlay applied (InvalidObjects among them)."""
        pods = list(self.parsed.pods)
        for at, pod in self.pods.items():
            pods[at] = pod
        return [*self.parsed.others, *pods, *self.groups]


def parsed_objects(
    parsed: ParsedView,
    cache: ClusterCache,
    assumed: AssumedPods,
    namespaces: Collection[str] = (),
    pending_groups: Iterable[Body] = (),
    unseen: Unseen | None = None,
) -> Shown:
    """The parsed view with this process's writes overlaid: on the event loop, where
    those books are kept. `pending_groups`: PodGroups of automatic gangs being
    created, counted already."""
    groups = [*parsed.groups, *((body, cache.parse(body)) for body in pending_groups
                                if _in(body, namespaces))]
    return Shown(parsed, _pods(parsed, assumed, unseen), list(_groups(groups, cache, unseen)))


def _pods(parsed: ParsedView, assumed: AssumedPods, unseen: Unseen | None) -> dict[int, PodInfo]:
    """The pods shown otherwise than parsed, by place: only pods in this process's books
    are looked at."""
    keys = {*assumed, *(unseen.evicting if unseen is not None else ())}
    places = [parsed.place[key] for key in keys if key in parsed.place]
    places += (at for at in parsed.repeated if parsed.pods[at].key in keys)
    overlaid: dict[int, PodInfo] = {}
    for at in sorted(places):
        pod = parsed.pods[at]
        shown = assumed.shown(pod)
        if unseen is not None:
            shown = unseen.evicting.shown(shown)
        if shown is not pod:
            overlaid[at] = shown
    return overlaid


def _groups(entries: Iterable[Entry], cache: ClusterCache,
            unseen: Unseen | None) -> Iterator[object]:
    for body, group in entries:
        if unseen is not None:
            nominated = unseen.nominations.shown(body)
            if nominated is not body:
                group = cache.parse(nominated)
        yield group


def assemble(
    shown: Shown,
    backoffs: Mapping[GroupKey, Backoff] | None = None,
    refused: Collection[str] = (),
    partial_since: Mapping[GroupKey, float] | None = None,
    previous: ClusterIndex | None = None,
    class_resources: Mapping[str, str] | None = None,
) -> Snapshot:
    """The core's snapshot of the shown objects (the invalid ones set apart); pure, so
    the operator builds it in the worker thread that runs the core. `previous`: the last
    cycle's index, whose unchanged parts the new one takes over (`ClusterIndex`);
    `class_resources`: the setting `dra.class_resources`."""
    objects = shown.objects()
    invalid = [item for item in objects if isinstance(item, InvalidObject)]
    return assemble_snapshot((item for item in objects if not isinstance(item, InvalidObject)),
                             invalid, backoffs, refused, partial_since, previous, class_resources)


def take_snapshot(
    cache: ClusterCache,
    assumed: AssumedPods,
    mode: Mode,
    namespaces: Collection[str] = (),
    backoffs: Mapping[GroupKey, Backoff] | None = None,
    pending_groups: Iterable[Body] = (),
    unseen: Unseen | None = None,
    partial_since: Mapping[GroupKey, float] | None = None,
    previous: ClusterIndex | None = None,
) -> Snapshot:
    """The three steps in a row, on the caller's thread (tests and tools)."""
    parsed = parse_view(cache, cache.view(), mode, namespaces)
    shown = parsed_objects(parsed, cache, assumed, namespaces, pending_groups, unseen)
    refused = unseen.evicting.refused_lately() if unseen is not None else ()
    return assemble(shown, backoffs, refused, partial_since, previous)


def group_pods(
    snapshot: Snapshot, key: str, pods: Mapping[str, Body], waiting: bool = True
) -> Sequence[Body]:
    """The group's waiting pods (or its unfinished pods on nodes), as cached bodies: the
    way back from a decision to the objects its Events and conditions go on."""
    members = snapshot.index.members.get(GroupKey(key))
    if members is None:  # a lone pod of ours is a group of one
        single = snapshot.index.singles.get(GroupKey(key)) if waiting else None
        return [pods[single.key]] if single is not None and single.key in pods else []
    infos = members.waiting if waiting else members.running
    return [pods[info.key] for info in infos if info.key in pods]
