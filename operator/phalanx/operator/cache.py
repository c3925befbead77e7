"""In-memory indexes of the watched objects: one slimmed body per object.

Queues, NetworkTopologies and PriorityClasses are Kopf indexes (`@kopf.index`: Kopf drops
a body when its object is deleted and holds back every other handler until all indexes
are listed, see kube/kopf_handlers.py). Pods, PodGroups and Nodes, the numerous kinds,
come from a plain list+watch in the same shape (kube/raw_watch.py), and so do Kubernetes'
own PodGroups and the workloads with automatic gangs (Job, JobSet, ...: one watch per kind,
read as one store). The cache is complete once all have listed.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from phalanx.core.names import UPSTREAM_API_GROUP
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
    UPSTREAM_POD_GROUP = "phalanx_upstream_podgroups"  # scheduling.k8s.io/v1alpha2
    WORKLOAD = "phalanx_workloads"  # Job, JobSet, LeaderWorkerSet, PyTorchJob, TrainJob


def object_key(body: Body) -> str:
    """`namespace/name` for namespaced objects, `name` for cluster-scoped ones."""
    meta = body.get("metadata", {})
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


def slim(body: Body) -> dict[str, Any]:
    """A plain copy without managedFields: the largest part of a body, and never needed."""
    meta = {k: v for k, v in body.get("metadata", {}).items() if k != "managedFields"}
    return {**{k: v for k, v in body.items() if k != "metadata"}, "metadata": meta}


class ClusterCache:
    """Read access to the watched objects, one store per kind."""

    def __init__(self, stores: Mapping[Kind, Store]) -> None:
        self._stores = stores

    @classmethod
    def from_objects(cls, objects: Iterable[Body]) -> ClusterCache:
        """A cache over plain objects (for tests and one-shot tools)."""
        by_kind: dict[Kind, dict[Hashable, list[Body]]] = {kind: {} for kind in Kind}
        for body in objects:
            kind = kind_of_body(body)
            if kind is not None:
                key = object_key(body)
                by_kind[kind][(body.get("kind"), key) if kind is Kind.WORKLOAD else key] = [body]
        return cls(by_kind)

    def objects(self, kind: Kind) -> Iterator[Body]:
        store = self._stores.get(kind, {})
        for key in list(store):
            yield from store[key]

    def get(self, kind: Kind, key: str) -> Body | None:
        store = self._stores.get(kind, {})
        if key not in store:
            return None
        return next(iter(store[key]), None)

    def all_objects(self) -> Iterator[Body]:
        for kind in Kind:
            yield from self.objects(kind)


def kind_of_body(body: Body) -> Kind | None:
    """Which store an object belongs in (Kubernetes' PodGroup is not Phalanx's)."""
    name = str(body.get("kind"))
    if name == "PodGroup" and str(body.get("apiVersion", "")).startswith(UPSTREAM_API_GROUP + "/"):
        return Kind.UPSTREAM_POD_GROUP
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
}
