"""Automatic gangs: Job, JobSet, LeaderWorkerSet, PyTorchJob and TrainJob -> PodGroups (pure)."""

from phalanx.workloads.kinds import WORKLOAD_KINDS, WorkloadKind, kind_of
from phalanx.workloads.translate import pod_groups_for

__all__ = ["WORKLOAD_KINDS", "WorkloadKind", "kind_of", "pod_groups_for"]
