"""The Lease record and the pure decision a candidate takes on it.

Expiry is judged on the candidate's own clock, from when it last saw the record change,
not from the renewTime written by another machine: clocks of two nodes may disagree, but
each replica measures its own elapsed time correctly (the rule client-go follows too).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from phalanx import __version__
from phalanx.core.model.names import OPERATOR_VERSION_ANNOTATION


class Action(enum.Enum):
    ACQUIRE = "acquire"  # the lease is free or expired: take it
    RENEW = "renew"  # we hold it: renew it
    WAIT = "wait"  # someone else holds it and it has not expired


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    holder: str
    duration_seconds: int
    transitions: int
    renew_time: str = ""
    acquire_time: str = ""
    resource_version: str = ""
    operator_version: str = ""  # what the last writer recorded (OPERATOR_VERSION_ANNOTATION)

    @property
    def version(self) -> tuple[str, str, str]:
        """What changes whenever the holder writes the lease."""
        return (self.holder, self.renew_time, self.resource_version)


def parse_lease(obj: Mapping[str, Any]) -> LeaseRecord:
    spec = obj.get("spec") or {}
    metadata = obj.get("metadata") or {}
    return LeaseRecord(
        holder=str(spec.get("holderIdentity") or ""),
        duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        transitions=int(spec.get("leaseTransitions") or 0),
        renew_time=str(spec.get("renewTime") or ""),
        acquire_time=str(spec.get("acquireTime") or ""),
        resource_version=str(metadata.get("resourceVersion") or ""),
        operator_version=str((metadata.get("annotations") or {}).get(OPERATOR_VERSION_ANNOTATION)
                             or ""),
    )


def decide(record: LeaseRecord | None, identity: str, observed_at: float, now: float) -> Action:
    """What `identity` does, having last seen `record` change at `observed_at` (its clock)."""
    if record is None or not record.holder:
        return Action.ACQUIRE
    if record.holder == identity:
        return Action.RENEW
    if observed_at + record.duration_seconds <= now:
        return Action.ACQUIRE
    return Action.WAIT


def micro_time(moment: datetime) -> str:
    """Kubernetes MicroTime: RFC 3339 with microseconds, in UTC."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_body(
    name: str,
    namespace: str,
    holder: str,
    duration_seconds: int,
    transitions: int,
    acquire_time: str,
    renew_time: str,
    resource_version: str = "",
) -> dict[str, Any]:
    # Every write records the writer's version: the holder's, while it leads.
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "annotations": {OPERATOR_VERSION_ANNOTATION: __version__},
    }
    if resource_version:
        metadata["resourceVersion"] = resource_version  # optimistic concurrency on update
    spec: dict[str, Any] = {
        "holderIdentity": holder,
        "leaseDurationSeconds": duration_seconds,
        "leaseTransitions": transitions,
    }
    if acquire_time:
        spec["acquireTime"] = acquire_time
    if renew_time:
        spec["renewTime"] = renew_time
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": metadata,
        "spec": spec,
    }
