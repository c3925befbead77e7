"""Evictions this process asked for, across cycles: what the next snapshot must show.

Between an eviction request and the watch showing the pod terminating (or gone), the next
cycle would see the victim still running and choose it again: a pod being evicted is
shown to the core as terminating (its room counts as freeing up), as a pod being bound is
shown on its node (`assumed.py`). A pod whose eviction the API server refused (a
PodDisruptionBudget: 429) is handed to the core in `Snapshot.eviction_refused` for
`retry_seconds`, so it picks other victims or waits and says so; after that the pod may
be tried again (the budget may allow it by then).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping, Sequence

from phalanx.core.model.eviction import Eviction
from phalanx.core.model.inputs import PodInfo
from phalanx.operator.cache import Body
from phalanx.operator.pods import is_deleting


class EvictionBook:
    def __init__(self, retry_seconds: float, ttl_seconds: float) -> None:
        self._retry = retry_seconds
        self._ttl = ttl_seconds
        self._asked: dict[str, float] = {}  # pod key -> when the overlay ends (inf: in flight)
        self._refused: dict[str, float] = {}  # pod key -> when its eviction was refused
        self._shown: dict[str, tuple[PodInfo, PodInfo]] = {}  # key -> (parsed, as shown)

    def __contains__(self, key: object) -> bool:
        return key in self._asked

    def __iter__(self) -> Iterator[str]:
        """The keys of the pods being evicted or shown so."""
        return iter(self._asked)

    def start(self, evictions: Sequence[Eviction]) -> list[Eviction]:
        """The evictions not asked for already; from now on their pods show as leaving."""
        new = [e for e in evictions if e.pod not in self._asked]
        for eviction in new:
            self._asked[eviction.pod] = math.inf
            self._refused.pop(eviction.pod, None)
        return new

    def accepted(self, key: str, now: float) -> None:
        """The API server took the eviction: the watch shows the pod leaving within the TTL."""
        if key in self._asked:
            self._asked[key] = now + self._ttl

    def refused(self, key: str, now: float) -> None:
        """The API server refused it (PodDisruptionBudget): the pod stays, the core knows."""
        self._drop(key)
        self._refused[key] = now

    def failed(self, key: str) -> None:
        """Not evicted for another reason: the next cycle decides again."""
        self._drop(key)

    def expire(self, pods: Mapping[str, Body], now: float) -> None:
        """Drop what the watch confirmed (pod leaving or gone), and what timed out."""
        for key, until in list(self._asked.items()):
            pod = pods.get(key)
            if pod is None or is_deleting(pod) or until <= now:
                self._drop(key)
        for key, when in list(self._refused.items()):
            if key not in pods or when + self._retry <= now:
                del self._refused[key]

    def refused_lately(self) -> frozenset[str]:
        return frozenset(self._refused)

    def shown(self, pod: PodInfo) -> PodInfo:
        """The pod as the core should see it: being evicted, it shows as terminating."""
        if pod.terminating or pod.key not in self._asked:
            return pod
        made = self._shown.get(pod.key)  # the same object each cycle: see `ClusterIndex`
        if made is None or made[0] is not pod:
            made = self._shown[pod.key] = (pod, dataclasses.replace(pod, terminating=True))
        return made[1]

    def _drop(self, key: str) -> None:
        self._asked.pop(key, None)
        self._shown.pop(key, None)
