"""The workload kinds that get a gang automatically, and where their API lives.

One table, read by the translation (which kind is which), the operator (what to watch)
and the RBAC manifests' test (what the operator may read).
"""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.core.parse.membership import (
    JOB,
    JOBSET,
    LWS,
    MPIJOB,
    PYTORCHJOB,
    RAYCLUSTER,
    TRAINJOB,
)


@dataclass(frozen=True, slots=True)
class WorkloadKind:
    """`prefix` starts the names of the kind's PodGroups (see `workload_group_name`)."""

    group: str
    version: str
    kind: str
    plural: str
    prefix: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


WORKLOAD_KINDS: tuple[WorkloadKind, ...] = (
    WorkloadKind("batch", "v1", "Job", "jobs", JOB),
    WorkloadKind("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets", JOBSET),
    WorkloadKind("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", "leaderworkersets", LWS),
    WorkloadKind("kubeflow.org", "v1", "PyTorchJob", "pytorchjobs", PYTORCHJOB),
    WorkloadKind("trainer.kubeflow.org", "v1alpha1", "TrainJob", "trainjobs", TRAINJOB),
    WorkloadKind("ray.io", "v1", "RayCluster", "rayclusters", RAYCLUSTER),
    WorkloadKind("kubeflow.org", "v2beta1", "MPIJob", "mpijobs", MPIJOB),
)


def kind_of(obj_kind: str) -> WorkloadKind | None:
    for kind in WORKLOAD_KINDS:
        if kind.kind == obj_kind:
            return kind
    return None
