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


def key_of(namespace: str, name: str) -> str:
    """The `namespace/name` form every id in Phalanx uses."""
    return f"{namespace}/{name}"
