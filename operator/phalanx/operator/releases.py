"""Carrying out the core's partial-gang releases (`phalanx.core.admission.partial`): the
released pods deleted so their controller starts the gang again whole, with an Event, and
Kubernetes' own PodGroup set back to not scheduled; and which of a gang's nodes failed,
said once per cause."""

from __future__ import annotations

from collections.abc import Mapping

from phalanx.core.admission.node_loss import lost_nodes
from phalanx.core.model.names import GroupKey
from phalanx.core.model.result import CycleResult, GroupDecision
from phalanx.core.parse.upstream import is_upstream
from phalanx.core.snapshot.picture import Snapshot
from phalanx.operator.cache import Body
from phalanx.operator.cache_snapshot import group_pods
from phalanx.operator.compose import node_failed_event
from phalanx.operator.events import Event
from phalanx.operator.kube.client import UPSTREAM_PODGROUPS
from phalanx.operator.upstream_status import released_status
from phalanx.operator.writes import Writes


class Releases:
    """The releases of the cycles, as `Scheduler` hands them over."""

    def __init__(self, writes: Writes) -> None:
        self._writes = writes

    def release_partial(
        self,
        result: CycleResult,
        snapshot: Snapshot,
        groups: Mapping[str, Body],
        pods: Mapping[str, Body],
    ) -> None:
        """Carry out the cycle's partial-gang releases (decided by the core: partial.py),
        of either PodGroup kind (`groups`: Phalanx's, and Kubernetes' own where Phalanx
        has none of that name); and say which of a gang's nodes failed."""
        for decision in result.groups:
            group = groups.get(decision.group)
            if group is not None and not decision.implicit:
                self._report_lost_nodes(decision, group, snapshot, pods)
        for release in result.releases:
            group = groups.get(release.group)
            if group is None:
                continue
            event = Event(group, "Warning", release.reason, release.message, topic="partial")
            for key in release.pods:
                self._writes.delete_pod(key)
            if is_upstream(group):  # on what this cycle's report offered, if anything
                group = self._writes.as_offered(UPSTREAM_PODGROUPS, group)
            status = released_status(group, event.message, result.now) if (
                release.pods and is_upstream(group)) else None
            if status is None:
                self._writes.event(event)
            else:  # Kubernetes' PodGroup: no longer scheduled, with the Event
                self._writes.status(UPSTREAM_PODGROUPS, group, status, (event,))

    def _report_lost_nodes(
        self, decision: GroupDecision, group: Body, snapshot: Snapshot, pods: Mapping[str, Body]
    ) -> None:
        placed = group_pods(snapshot, decision.group, pods, waiting=False)
        # The placement outlives pods evicted from a failed node; Kubernetes' own
        # PodGroups have none, their pods still on the node name it.
        placement = (group.get("status") or {}).get("placement") or {}
        on_nodes = [str(p.get("spec", {}).get("nodeName")) for p in placed]
        members = snapshot.index.members.get(GroupKey(decision.group))
        tolerations = [p.tolerations for p in members.pods] if members else []
        lost = lost_nodes([*(placement.get("nodes") or ()), *on_nodes], snapshot.index,
                          tolerations)
        if lost:
            self._writes.event(node_failed_event(group, lost, decision, placed))

