"""Where a pod's workload is: the owner references to read, one hop at a time (pure).

A pod at CREATE time names its controller in `metadata.ownerReferences` (a Job's pod its
Job, a JobSet's pod its Job and that Job the JobSet, a PyTorchJob's pod the PyTorchJob).
Only the kinds that get gangs (`phalanx.workloads.WORKLOAD_KINDS`) are followed: the
operator may read those, and no other kind makes a gang. A LeaderWorkerSet's pods are
owned by StatefulSets, so a pod labelled with its LeaderWorkerSet's name reads that
directly. The chain stops after `MAX_HOPS`, so a strange chain never holds an admission.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from phalanx.core.parse.membership import LWS_NAME_LABEL
from phalanx.workloads import WORKLOAD_KINDS, kind_of

MAX_HOPS = 3  # TrainJob -> JobSet -> Job -> pod, the longest chain of the known kinds


@dataclass(frozen=True, slots=True)
class OwnerRef:
    """An object to read: its API path and the uid it must have (None: any)."""

    path: str
    uid: str | None


def controller_of(obj: Mapping[str, Any], namespace: str) -> OwnerRef | None:
    """The object's controller, when it is of a kind that makes gangs."""
    refs = _metadata(obj).get("ownerReferences")
    for ref in refs if isinstance(refs, list) else []:
        if not isinstance(ref, Mapping) or ref.get("controller") is not True:
            continue
        kind = kind_of(str(ref.get("kind")))
        if kind is None or str(ref.get("apiVersion", "")).split("/")[0] != _group(kind.group):
            return None
        return OwnerRef(object_path(kind.group, kind.version, kind.plural, namespace,
                                    str(ref.get("name"))), str(ref.get("uid") or "") or None)
    return None


def first_owner(pod: Mapping[str, Any], namespace: str) -> OwnerRef | None:
    """The pod's controller; for a LeaderWorkerSet's pod, the LeaderWorkerSet its label names."""
    found = controller_of(pod, namespace)
    if found is not None:
        return found
    labels = _metadata(pod).get("labels")
    name = labels.get(LWS_NAME_LABEL) if isinstance(labels, Mapping) else None
    if not name:
        return None
    (lws,) = [k for k in WORKLOAD_KINDS if k.kind == "LeaderWorkerSet"]
    return OwnerRef(object_path(lws.group, lws.version, lws.plural, namespace, str(name)), None)


def object_path(group: str, version: str, plural: str, namespace: str, name: str) -> str:
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    return f"{base}/namespaces/{namespace}/{plural}/{name}"


def _group(group: str) -> str:
    """The group part of an apiVersion ("batch/v1" -> batch; "v1" is the core group)."""
    return group or "v1"


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}
