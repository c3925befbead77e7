"""Pods the writer bound or un-gated that the watch has not shown on a node yet.

Kube-scheduler's idea: without it the next cycle would see those pods still pending and
their GPUs still free, and place something else there. An entry ends when the watch
shows the pod on a node, when the pod is gone (or another pod took its name), or when it
expires. A pod whose binding the API server accepted never expires: a binding is final
(nodeName is never unset), and under load the watch showed it up to ~200 s later
(bench-12500): with a timer, 25,869 of 52,714 pods were placed again and their second
bindings refused (409). An un-gated pod (gate mode) still expires: kube-scheduler has
yet to bind it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping

from phalanx.core.model.inputs import PodInfo
from phalanx.core.parse.gpu_share import parse_gpu_index
from phalanx.core.snapshot.ours import bound_on
from phalanx.operator.cache import Body


@dataclasses.dataclass(frozen=True)
class Assumption:
    """`devices`: the GPU devices chosen for the pod (the gpu-index annotation's text,
    "" for none), shown on the assumed pod so the next cycle counts them as held."""

    node: str
    expires: float
    devices: str = ""
    uid: str = ""  # the pod's, when known: a pod of the same name made since is not it


class AssumedPods:
    def __init__(self, ttl_seconds: float) -> None:
        self._ttl = ttl_seconds
        self._pods: dict[str, Assumption] = {}
        # pod key -> (the parsed pod, where it was assumed, the pod as shown there)
        self._shown: dict[str, tuple[PodInfo, str, str, PodInfo]] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, pod_key: object) -> bool:
        return pod_key in self._pods

    def __iter__(self) -> Iterator[str]:
        """The keys of the assumed pods."""
        return iter(self._pods)

    def node_of(self, pod_key: str) -> str | None:
        entry = self._pods.get(pod_key)
        return entry.node if entry else None

    def assume(
        self, pod_key: str, node: str, now: float | None = None, devices: str = "",
        uid: str = "",
    ) -> None:
        """Hold the pod on `node` (and its GPU `devices`); without `now` (its write not
        answered yet) it never expires: a long queue of writes must not let the next
        cycle place it again."""
        expires = math.inf if now is None else now + self._ttl
        self._pods[pod_key] = Assumption(node, expires, devices, uid)

    def written(self, pod_key: str, now: float, final: bool = False) -> None:
        """The pod's write was accepted: the watch should show it within the TTL, or, for a
        `final` write (a binding), whenever it does."""
        entry = self._pods.get(pod_key)
        if entry is not None and not final:
            self._pods[pod_key] = dataclasses.replace(entry, expires=now + self._ttl)

    def forget(self, pod_key: str) -> None:
        self._pods.pop(pod_key, None)
        self._shown.pop(pod_key, None)

    def expire(self, pods: Mapping[str, Body], now: float) -> None:
        """Drop entries the watch confirmed (pod on a node, or gone) or that timed out."""
        for key, entry in list(self._pods.items()):
            pod = pods.get(key)
            if (pod is None or pod.get("spec", {}).get("nodeName") or entry.expires <= now
                    or (entry.uid and pod.get("metadata", {}).get("uid", entry.uid)
                        != entry.uid)):
                self.forget(key)

    def shown(self, pod: PodInfo) -> PodInfo:
        """The pod as the core should see it: if assumed (and not on a node yet), on its
        node (and GPU devices) and no longer gated by Phalanx, as it will be once its
        write lands."""
        entry = self._pods.get(pod.key) if self._pods else None
        if entry is None or pod.node_name:
            return pod
        made = self._shown.get(pod.key)  # the same object each cycle: see `ClusterIndex`
        if made is not None and made[0] is pod and made[1:3] == (entry.node, entry.devices):
            return made[3]
        devices = parse_gpu_index(entry.devices) if entry.devices else None
        shown = bound_on(pod, entry.node, devices)
        self._shown[pod.key] = (pod, entry.node, entry.devices, shown)
        return shown
