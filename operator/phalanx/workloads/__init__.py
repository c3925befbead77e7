"""Automatic gangs: Job, JobSet, LeaderWorkerSet, PyTorchJob, TrainJob, RayCluster (and so
RayJob) and MPIJob -> PodGroups (pure)."""

from phalanx.workloads.kinds import WORKLOAD_KINDS, WorkloadKind, kind_of
from phalanx.workloads.translate import pod_groups_for

__all__ = ["WORKLOAD_KINDS", "WorkloadKind", "kind_of", "pod_groups_for"]
