"""The names of things: key types, and every well-known name Phalanx shares with
Kubernetes and its peers (API group, labels, annotations, the gate, resource names).

The one place such a string is spelled; the core, the shell, the CLI and the CRD models
all read it from here (the core may not import the shell, so it lives in the core).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, NewType

PodKey = NewType("PodKey", str)
GroupKey = NewType("GroupKey", str)
NodeName = NewType("NodeName", str)

API_GROUP = "scheduling.phalanx.io"
API_VERSION = "v1alpha1"
GROUP_VERSION: Final = "scheduling.phalanx.io/v1alpha1"  # an object's apiVersion
SCHEDULER_NAME = "phalanx"  # pods naming it in spec.schedulerName are bound by Phalanx
COMPONENT = "phalanx"  # Events' source and reportingComponent

DNS_LABEL: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"  # a namespace, a level name (the CRDs')
DNS_LABEL_MAX: Final = 63  # characters at most in such a name

HOSTNAME_LABEL = "kubernetes.io/hostname"  # the last NetworkTopology level, one node each
GPU = "nvidia.com/gpu"
CPU = "cpu"
MEMORY = "memory"
PODS = "pods"

# GPU sharing: a pod asks for part of one GPU by annotation (no nvidia.com/gpu request);
# the device(s) Phalanx chose are written on the pod with the bind or the un-gate.
GPU_FRACTION_ANNOTATION = "scheduling.phalanx.io/gpu-fraction"  # "0.25": 0 < f < 1
GPU_MEMORY_ANNOTATION = "scheduling.phalanx.io/gpu-memory"  # "20Gi" of one GPU's memory
GPU_INDEX_ANNOTATION = "scheduling.phalanx.io/gpu-index"  # "3", or "0,1,2,3" (whole GPUs)
# A gang's plan (every pod's node and devices, JSON), on the first pod bound; see
# operator/plans.py.
PLAN_ANNOTATION = "scheduling.phalanx.io/plan"
KAI_GPU_FRACTION_ANNOTATION = "gpu-fraction"  # NVIDIA KAI scheduler's, read the same way
KAI_GPU_MEMORY_ANNOTATION = "gpu-memory"  # KAI's: MiB as a plain number, or a quantity
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"  # GPU Feature Discovery: MiB per GPU
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"  # GPU Feature Discovery: the GPU model

GROUP_LABEL = "scheduling.phalanx.io/pod-group"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
PLUGINS_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
ROLE_LABEL = "scheduling.phalanx.io/role"
GANG_GATE = "scheduling.phalanx.io/gang"
DEFAULT_QUEUE = "default"
DEFAULT_TOPOLOGY = "default"

# On the leader election Lease: the version of the operator that last wrote it (its holder),
# so `kubectl phalanx install-check` can tell which operator leads
OPERATOR_VERSION_ANNOTATION = "scheduling.phalanx.io/operator-version"

UPSTREAM_API_GROUP = "scheduling.k8s.io"  # Kubernetes' own Workload API (v1alpha2 PodGroups)

# Phalanx's own settings where no PodGroup field can carry them: on an upstream PodGroup
# (annotations) and on a workload (the queue as a label, the rest as annotations).
QUEUE_KEY = "scheduling.phalanx.io/queue"
# on a Namespace: the queue of its workloads that carry no queue label (they become gangs,
# and the admission webhook sends their pods to Phalanx)
NAMESPACE_DEFAULT_QUEUE_LABEL = "scheduling.phalanx.io/default-queue"
PRIORITY_CLASS_ANNOTATION = "scheduling.phalanx.io/priority-class-name"
NETWORK_TOPOLOGY_ANNOTATION = "scheduling.phalanx.io/network-topology"
REQUIRED_ANNOTATION = "scheduling.phalanx.io/topology-required"
PREFERRED_ANNOTATION = "scheduling.phalanx.io/topology-preferred"
SUBGROUP_SIZE_ANNOTATION = "scheduling.phalanx.io/topology-subgroup-size"
SUBGROUP_LEVEL_ANNOTATION = "scheduling.phalanx.io/topology-subgroup-level"
SCHEDULE_TIMEOUT_ANNOTATION = "scheduling.phalanx.io/schedule-timeout-seconds"
# when the job last saved its progress (RFC 3339), on its PodGroup: a training loop or a
# sidecar keeps it current; what an eviction loses is counted from it
CHECKPOINTED_AT_ANNOTATION = "scheduling.phalanx.io/checkpointed-at"
# on a workload or Kubernetes' PodGroup: spec.checkpointIntervalSeconds of its gang
CHECKPOINT_INTERVAL_ANNOTATION = "scheduling.phalanx.io/checkpoint-interval-seconds"
# on a workload or Kubernetes' PodGroup: spec.runtimeLimitSeconds of its gang (the longest
# it runs before it is evicted)
RUNTIME_LIMIT_ANNOTATION = "scheduling.phalanx.io/runtime-limit-seconds"
GANG_SCOPE_ANNOTATION = "scheduling.phalanx.io/gang-scope"  # on a workload: its gangs
MIN_MEMBER_ANNOTATION = "scheduling.phalanx.io/min-member"  # on a workload: its gang minimum

# On the PodGroups the operator creates for a workload, and Kueue's topology annotations
# on a workload's pod templates (read as the PodGroup's node-label levels).
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
KUEUE_REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
# Kueue's label on a workload: the most seconds it may run (the gang's runtime limit)
KUEUE_MAX_EXEC_TIME_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"


def key_of(namespace: str, name: str) -> str:
    """The `namespace/name` form every id in Phalanx uses."""
    return f"{namespace}/{name}"


def group_name(labels: Mapping[str, str], annotations: Mapping[str, str]) -> str | None:
    """The group a pod names, in the contract's order: Phalanx label, Volcano's
    annotation, scheduler-plugins' label (pods written for either work unchanged)."""
    for value in (
        labels.get(GROUP_LABEL),
        annotations.get(VOLCANO_GROUP_ANNOTATION),
        labels.get(PLUGINS_GROUP_LABEL),
    ):
        if value:
            return str(value)
    return None
