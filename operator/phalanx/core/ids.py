"""Identifiers and the well-known names Phalanx shares with Kubernetes and its peers."""

from __future__ import annotations

from typing import NewType

PodKey = NewType("PodKey", str)
GroupKey = NewType("GroupKey", str)
NodeName = NewType("NodeName", str)

SCHEDULER_NAME = "phalanx"
GPU = "nvidia.com/gpu"
CPU = "cpu"
MEMORY = "memory"
PODS = "pods"

GROUP_LABEL = "scheduling.phalanx.io/pod-group"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
PLUGINS_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
ROLE_LABEL = "scheduling.phalanx.io/role"
GANG_GATE = "scheduling.phalanx.io/gang"
DEFAULT_QUEUE = "default"
DEFAULT_TOPOLOGY = "default"

API_GROUP = "scheduling.phalanx.io"
UPSTREAM_API_GROUP = "scheduling.k8s.io"  # Kubernetes' own Workload API (v1alpha2 PodGroups)

# Phalanx's own settings where no PodGroup field can carry them: on an upstream PodGroup
# (annotations) and on a workload (the queue as a label, the rest as annotations).
QUEUE_KEY = "scheduling.phalanx.io/queue"
PRIORITY_CLASS_ANNOTATION = "scheduling.phalanx.io/priority-class-name"
NETWORK_TOPOLOGY_ANNOTATION = "scheduling.phalanx.io/network-topology"
REQUIRED_ANNOTATION = "scheduling.phalanx.io/topology-required"
PREFERRED_ANNOTATION = "scheduling.phalanx.io/topology-preferred"
SUBGROUP_SIZE_ANNOTATION = "scheduling.phalanx.io/topology-subgroup-size"
SUBGROUP_LEVEL_ANNOTATION = "scheduling.phalanx.io/topology-subgroup-level"


def key_of(namespace: str, name: str) -> str:
    """The `namespace/name` form every id in Phalanx uses."""
    return f"{namespace}/{name}"
