"""The optional kinds, watched from whenever the API server starts serving them.

Kubernetes' own PodGroup (the Workload API, alpha, off by default) and the workload kinds
of automatic gangs (CRDs: JobSet, LeaderWorkerSet, ...) may be missing when the operator
starts and installed later: a JobSet controller deployed after Phalanx must not need a
Phalanx restart. So discovery runs at start and then every `period` seconds (a few GETs
of `/apis/GROUP/VERSION`, no RBAC needed), on an injectable clock; a kind found for the
first time gets its watch then. A kind is never unwatched: a CRD deleted takes its
objects with it (the watch sees them go), and its watch keeps retrying quietly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import structlog

from phalanx.operator.clock import Clock, MonotonicClock
from phalanx.operator.kube.client import Api
from phalanx.operator.kube.discovery import serves

log = structlog.get_logger("phalanx.operator")


@dataclass(frozen=True, slots=True)
class OptionalKind:
    group_version: str
    plural: str
    kind: str

    @property
    def resource(self) -> str:
        """plural.group: the same objects in every version the API server serves."""
        return f"{self.plural}.{self.group_version.rpartition('/')[0]}"


class OptionalKinds:
    """Calls `watch(kind)` once for each of `kinds` the API server serves, as soon as
    discovery finds it. Kinds listed in several versions (Kubernetes' PodGroup: v1beta1
    on 1.37, v1alpha2 on 1.36) are watched in one only, the first listed that is served:
    every served version shows the same objects."""

    def __init__(
        self,
        api: Api,
        kinds: Iterable[OptionalKind],
        watch: Callable[[OptionalKind], None],
        period: float,
        clock: Clock | None = None,
    ) -> None:
        self._api = api
        self._kinds = tuple(kinds)
        self._watch = watch
        self._period = period
        self._clock = clock or MonotonicClock()
        self.watched: list[OptionalKind] = []

    async def discover(self) -> list[OptionalKind]:
        """Start watching the kinds served now and not watched yet; returns them."""
        found: list[OptionalKind] = []
        for kind in self._kinds:
            if kind.resource in self._resources() or not await serves(
                    self._api, kind.group_version, kind.plural):
                continue
            found.append(kind)
            self.watched.append(kind)
            self._watch(kind)
        if found:
            log.info("optional kinds watched", new=[k.kind for k in found],
                     kinds=[k.kind for k in self.watched])
        return found

    def _resources(self) -> set[str]:
        return {kind.resource for kind in self.watched}

    async def run(self) -> None:
        """Discover again every `period` seconds until every kind is watched (or the task
        is cancelled); a failed discovery is logged and tried again next period."""
        while self._resources() != {kind.resource for kind in self._kinds}:
            await self._clock.sleep(self._period)
            try:
                await self.discover()
            except Exception as error:  # the API server may be briefly unreachable
                log.warning("discovery failed", error=str(error))
