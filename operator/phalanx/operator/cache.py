"""In-memory indexes of the watched objects: one slimmed body per object, and its parsed form.

Queues, NetworkTopologies and PriorityClasses are Kopf indexes (`@kopf.index`: Kopf drops
a body when its object is deleted and holds back every other handler until all indexes
are listed, see kube/kopf_handlers.py). Pods, PodGroups and Nodes, the numerous kinds,
come from a plain list+watch in the same shape (kube/raw_watch.py), and so do Kubernetes'
own PodGroups and the workloads with automatic gangs (Job, JobSet, ...: one watch per kind,
read as one store). The cache is complete once all have listed.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.names import UPSTREAM_API_GROUP
from phalanx.core.parse.objects import PARSERS, Parser, parse_object
from phalanx.workloads import kind_of

Body = Mapping[str, Any]
Store = Mapping[Hashable, Iterable[Body]]  # a Kopf index: key -> the values stored under it


class Kind(enum.StrEnum):
    """The watched kinds; the value names the kind's store (for the three Kopf-indexed
    kinds it is also the index id Kopf passes to the startup handler)."""

    NODE = "phalanx_nodes"
    POD = "phalanx_pods"
    POD_GROUP = "phalanx_podgroups"
    QUEUE = "phalanx_queues"
    NETWORK_TOPOLOGY = "phalanx_networktopologies"
    PRIORITY_CLASS = "phalanx_priorityclasses"
    UPSTREAM_POD_GROUP = "phalanx_upstream_podgroups"  # scheduling.k8s.io v1beta1 / v1alpha2
    UPSTREAM_COMPOSITE = "phalanx_upstream_compositepodgroups"  # scheduling.k8s.io/v1alpha3
    WORKLOAD = "phalanx_workloads"  # Job, JobSet, LeaderWorkerSet, PyTorchJob, TrainJob
    NAMESPACE = "phalanx_namespaces"  # Kopf-indexed: a namespace's default queue (label)
    # resource.k8s.io/v1 (Dynamic Resource Allocation), watched when served (dra_kinds.py)
    RESOURCE_SLICE = "phalanx_resourceslices"
    DEVICE_CLASS = "phalanx_deviceclasses"
    RESOURCE_CLAIM = "phalanx_resourceclaims"
    CLAIM_TEMPLATE = "phalanx_resourceclaimtemplates"


def object_key(body: Body) -> str:
    """`namespace/name` for namespaced objects, `name` for cluster-scoped ones."""
    meta = body.get("metadata", {})
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


def slim(body: Body) -> dict[str, Any]:
    """A plain copy without managedFields: the largest part of a body, and never needed."""
    meta = {k: v for k, v in body.get("metadata", {}).items() if k != "managedFields"}
    return {**{k: v for k, v in body.items() if k != "metadata"}, "metadata": meta}


class WatchStore(dict[Hashable, tuple[Body, ...]]):
    """A store whose entries are tuples, replaced and never changed in place (a watch's,
    `kube/raw_watch.py`): a shallow copy is a moment's picture of it, which `view` takes
    in one step instead of copying every entry (at bench-5000, 20,870 pods' entries)."""


View = Mapping[Kind, Mapping[Hashable, Sequence[Body]]]  # the stores at one moment


class ByKey(Mapping[str, Body]):
    """A view's store read as object key -> body (the first under the key; a watch's
    store has one), without copying it: for pods, `namespace/name` as `pods.pod_key`
    gives it. Building that dict on the event loop each cycle made a string per pod (at
    bench-5000, 20,870) where a cycle looks up only the pods it writes or recovers."""

    def __init__(self, store: Mapping[Hashable, Sequence[Body]]) -> None:
        self._store = store

    def __getitem__(self, key: str) -> Body:
        bodies = self._store[key]
        if not bodies:
            raise KeyError(key)
        return bodies[0]

    def __iter__(self) -> Iterator[str]:
        return (str(key) for key, bodies in self._store.items() if bodies)

    def __len__(self) -> int:
        return sum(1 for bodies in self._store.values() if bodies)


Parsed = object  # the core type (NodeInfo, PodInfo, ...), an InvalidObject, or None
Entry = tuple[Body, Parsed]


class ParsedObjects:
    """The cached objects parsed once per version, kept beside the raw bodies.

    An object's uid and resourceVersion name one content: a body seen at that version
    before (the watch keeps a body until the next event; a fresh LIST brings the same
    versions again) has its core type already, so a cycle only assembles. Parsing pods
    again at every cycle was the largest cost of taking a snapshot (cProfile of
    bench-1000: 25.9 s of 44.8 s of cycles). Invalid objects keep their error, so they
    are not parsed again either. Entries of objects gone from the store are dropped the
    next time their kind is read. `parsers`: by kind, as the core's `PARSERS`.
    """

    def __init__(self, parsers: Mapping[str, Parser] = PARSERS) -> None:
        self._parsers = parsers
        self._entries: dict[Hashable, dict[Hashable, Entry]] = {}

    def read(self, kind: Hashable, store: Store) -> list[Entry]:
        """Every object of `store` with its parsed form, parsing only what is new."""
        known = self._entries.get(kind, {})
        fresh: dict[Hashable, Entry] = {}
        entries: list[Entry] = []
        for key in list(store):  # keys only: a list of items would be a tuple apiece
            for position, body in enumerate(store[key]):
                slot = key if position == 0 else Later(key, position)
                entry = known.get(slot)
                if entry is None or (entry[0] is not body and not same_version(entry[0], body)):
                    entry = (body, self.parse(body))
                    if not version_of(body):  # nothing to know it by next time
                        entries.append(entry)
                        continue
                fresh[slot] = entry
                entries.append(entry)
        self._entries[kind] = fresh
        return entries

    def warm(self, kind: Hashable, bodies: Iterable[Body]) -> None:
        """Parse `bodies` now, ahead of the read that will find them in the store under
        their object key (a watch's store: one body per key). A LIST is parsed page by
        page this way while the next page is on its way, not all at once by the first
        cycle. Until that read, entries of objects gone are kept; it drops them."""
        known = self._entries.setdefault(kind, {})
        for body in bodies:
            if version_of(body):  # else it is parsed when read, as every time
                known[object_key(body)] = (body, self.parse(body))

    def parse(self, body: Body) -> Parsed:
        """Parse one body (no memory): its core type, or the InvalidObject it raised."""
        try:
            return parse_object(body, self._parsers)
        except InvalidObject as error:
            return error


@dataclasses.dataclass(frozen=True)
class Later:
    """Where `ParsedObjects` keeps the parsed form of a body after the first under its
    key (a Kopf index may hold several); the first is kept under the key itself, which
    spares a tuple per object and read (27,570 at bench-5000, every cycle). Equal to no
    key of a store: its class is its own."""

    key: Hashable
    position: int


def same_version(old: Body, new: Body) -> bool:
    """The same object at the same resourceVersion. A body without one (made by hand, in
    tests and files) has no version to trust: it is parsed every time (`read` does not
    keep its parsed form, so finding the same body again is the same version)."""
    version = version_of(new)
    if not version:
        return False
    if old is new:
        return True
    old_meta = old.get("metadata") or {}
    new_meta = new.get("metadata") or {}
    return (old_meta.get("resourceVersion"), old_meta.get("uid")) == (version, new_meta.get("uid"))


def version_of(body: Body) -> str | None:
    """The body's resourceVersion, None (or "") if it has none."""
    version = (body.get("metadata") or {}).get("resourceVersion")
    return str(version) if version else None


class ClusterCache:
    """Read access to the watched objects, one store per kind, and to their parsed forms
    (each object parsed once per version, see ParsedObjects)."""

    def __init__(self, stores: Mapping[Kind, Store], parsers: Mapping[str, Parser] = PARSERS,
                 ) -> None:
        self._stores = stores
        self._parsed = ParsedObjects(parsers)

    @classmethod
    def from_objects(cls, objects: Iterable[Body]) -> ClusterCache:
        """A cache over plain objects (for tests and one-shot tools)."""
        by_kind: dict[Kind, WatchStore] = {kind: WatchStore() for kind in Kind}
        for body in objects:
            kind = kind_of_body(body)
            if kind is not None:
                key = object_key(body)
                by_kind[kind][(body.get("kind"), key) if kind is Kind.WORKLOAD else key] = (body,)
        return cls(by_kind)

    def objects(self, kind: Kind) -> Iterator[Body]:
        store = self._stores.get(kind, {})
        for key in list(store):
            yield from store[key]

    def parsed(self, kind: Kind) -> list[Entry]:
        """Every object of `kind` with its core type (or InvalidObject; None for a kind
        the core does not read), parsing only objects changed since the last call."""
        return self._parsed.read(kind, self._stores.get(kind, {}))

    def view(self) -> View:
        """The stores' bodies as they are now: references, cheap to copy, which a worker
        thread can parse (`parsed_in`) while the watches go on changing the live stores
        (iterating a live store from a thread could meet it changing size)."""
        return {kind: store.copy() if isinstance(store, WatchStore)
                else {key: list(store[key]) for key in list(store)}
                for kind, store in self._stores.items()}

    def parsed_in(self, view: View, kind: Kind) -> list[Entry]:
        """`parsed`, over a view. Safe in a worker thread while the event loop runs: the
        parsed forms are only read and replaced per kind (a LIST's `warm` meanwhile may
        have its entries dropped, which costs a parse again, nothing else); one reader at
        a time, the scheduling loop's."""
        return self._parsed.read(kind, view.get(kind, {}))

    def warm(self, kind: Kind, bodies: Iterable[Body]) -> None:
        """Parse bodies about to be stored under `kind` (a watch's LIST, page by page)."""
        self._parsed.warm(kind, bodies)

    def parse(self, body: Body) -> object:
        """One body that is in no store (an overlay, an object being created), parsed as
        the cache parses, every time."""
        return self._parsed.parse(body)

    def get(self, kind: Kind, key: str) -> Body | None:
        store = self._stores.get(kind, {})
        if key not in store:
            return None
        return next(iter(store[key]), None)


def kind_of_body(body: Body) -> Kind | None:
    """Which store an object belongs in (Kubernetes' PodGroup is not Phalanx's)."""
    name = str(body.get("kind"))
    upstream = str(body.get("apiVersion", "")).startswith(UPSTREAM_API_GROUP + "/")
    if name == "PodGroup" and upstream:
        return Kind.UPSTREAM_POD_GROUP
    if name == "CompositePodGroup" and upstream:
        return Kind.UPSTREAM_COMPOSITE
    if kind_of(name) is not None:
        return Kind.WORKLOAD
    return KIND_OF.get(name)


class MergedStore(Mapping[Hashable, Iterable[Body]]):
    """Several watches' stores read as one; keys are (position, key), so a Job and a
    JobSet of one name stay apart. Stores may be added while it is being read."""

    def __init__(self, stores: Sequence[Store] = ()) -> None:
        self.stores: list[Store] = list(stores)

    def __getitem__(self, key: Hashable) -> Iterable[Body]:
        if not isinstance(key, tuple) or len(key) != 2 or not isinstance(key[0], int):
            raise KeyError(key)
        return self.stores[key[0]][key[1]]

    def __iter__(self) -> Iterator[Hashable]:
        for position, store in enumerate(list(self.stores)):
            for key in list(store):
                yield (position, key)

    def __len__(self) -> int:
        return sum(len(store) for store in self.stores)


KIND_OF: dict[str, Kind] = {
    "Node": Kind.NODE,
    "Pod": Kind.POD,
    "PodGroup": Kind.POD_GROUP,
    "Queue": Kind.QUEUE,
    "NetworkTopology": Kind.NETWORK_TOPOLOGY,
    "PriorityClass": Kind.PRIORITY_CLASS,
    "Namespace": Kind.NAMESPACE,
    "ResourceSlice": Kind.RESOURCE_SLICE,
    "DeviceClass": Kind.DEVICE_CLASS,
    "ResourceClaim": Kind.RESOURCE_CLAIM,
    "ResourceClaimTemplate": Kind.CLAIM_TEMPLATE,
}
