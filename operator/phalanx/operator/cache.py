"""In-memory indexes of the watched objects: one slimmed body per object.

Queues, NetworkTopologies and PriorityClasses are Kopf indexes (`@kopf.index`: Kopf drops
a body when its object is deleted and holds back every other handler until all indexes
are listed, see kube/kopf_handlers.py). Pods, PodGroups and Nodes, the numerous kinds,
come from a plain list+watch in the same shape (kube/raw_watch.py). The cache is complete
once all have listed.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import Any

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
            kind = KIND_OF.get(str(body.get("kind")))
            if kind is not None:
                by_kind[kind][object_key(body)] = [body]
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


KIND_OF: dict[str, Kind] = {
    "Node": Kind.NODE,
    "Pod": Kind.POD,
    "PodGroup": Kind.POD_GROUP,
    "Queue": Kind.QUEUE,
    "NetworkTopology": Kind.NETWORK_TOPOLOGY,
    "PriorityClass": Kind.PRIORITY_CLASS,
}
