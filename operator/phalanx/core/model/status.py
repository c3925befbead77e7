"""Status codes and typed reasons, as shown on PodGroup conditions and Events."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum


class StatusCode(Enum):
    """How a group came out of a cycle.

    UNRESOLVABLE means retrying is pointless until the cluster or the spec changes
    (e.g. a pod needs more GPUs than any node has); UNSCHEDULABLE may change as
    pods finish.
    """

    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"
    UNRESOLVABLE = "UnschedulableAndUnresolvable"
    ERROR = "Error"


class Reason(StrEnum):
    SCHEDULED = "Scheduled"
    FINISHED = "Finished"
    NO_DOMAIN_FITS = "NoDomainFits"
    QUEUE_CAPABILITY = "QueueCapability"
    QUEUE_CLOSED = "QueueClosed"
    NAMESPACE_NOT_ALLOWED = "NamespaceNotAllowed"
    QUEUE_NOT_FOUND = "QueueNotFound"
    TOPOLOGY_NOT_FOUND = "TopologyNotFound"
    LEVEL_NOT_FOUND = "LevelNotFound"
    LEVEL_UNLABELLED = "LevelUnlabelled"  # no node carries a label of the required level
    INSUFFICIENT_RESOURCES = "InsufficientResources"
    GANG_INCOMPLETE = "GangIncomplete"
    GROUP_NOT_FOUND = "GroupNotFound"
    INVALID_SPEC = "InvalidSpec"
    TIMEOUT = "Timeout"
    PREEMPTING = "Preempting"


class Exclusion(StrEnum):
    """Why one node cannot take a pod; counted per node, then formatted once."""

    NOT_READY = "node(s) were not ready"
    NEAR_NOT_READY = "node(s) were in a domain with a NotReady node"
    CORDONED = "node(s) were unschedulable"
    TAINT = "node(s) had untolerated taint"
    SELECTOR = "node(s) didn't match Pod's node selector"
    AFFINITY = "node(s) didn't match Pod's node affinity"
    TOO_MANY_PODS = "Too many pods"


@dataclass(frozen=True, slots=True)
class Problem:
    """Why a group was not placed: a code, a typed reason, and a message with numbers."""

    code: StatusCode
    reason: Reason
    message: str
