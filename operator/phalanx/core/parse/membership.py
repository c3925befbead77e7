"""Which gang a workload's pod belongs to, read from the labels its controller puts on it.

The operator creates one PodGroup per gang of a queue-labelled workload (see
`phalanx.workloads`), named by `workload_group_name`. Pods never carry our label: the
Job, JobSet, LeaderWorkerSet, Kubeflow, KubeRay and MPI controllers create them from their
templates with their own labels. So a pod lists the groups its labels could point to
(`implied_groups`), most specific first, and joins the first that exists
(`join_implied_groups`): a pod of a JobSet's child Job joins the JobSet's gang when the
JobSet is queue-labelled, the Job's gang when only the Job is, and no gang when neither is.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from phalanx.core.model.inputs import PodInfo
from phalanx.core.model.names import GroupKey, key_of

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL = "job-name"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
KUBEFLOW_JOB_LABEL = "training.kubeflow.org/job-name"
KUBEFLOW_OPERATOR_LABEL = "training.kubeflow.org/operator-name"
KUBEFLOW_ROLE_LABEL = "training.kubeflow.org/job-role"  # an MPIJob's: launcher or worker
PYTORCH_OPERATOR = "pytorchjob-controller"
MPI_OPERATOR = "mpi-operator"
RAY_CLUSTER_LABEL = "ray.io/cluster"
RAY_GROUP_LABEL = "ray.io/group"  # a worker group's name; the head's is `RAY_HEAD_GROUP`
RAY_HEAD_GROUP = "headgroup"
TRAINER_NODE_JOB = "node"  # the replicated job of a TrainJob's JobSet that runs the trainers

JOB = "job"
JOBSET = "jobset"
LWS = "lws"
PYTORCHJOB = "pytorchjob"
TRAINJOB = "trainjob"
RAYCLUSTER = "raycluster"
MPIJOB = "mpijob"


def workload_group_name(kind: str, name: str, part: str | None = None) -> str:
    """`job-train`, `jobset-train`, `jobset-train-workers` (one gang per replicated job),
    `lws-serve-0` (group 0): the kind keeps a Job and a JobSet of one name apart."""
    return f"{kind}-{name}" if part is None else f"{kind}-{name}-{part}"


def implied_groups(labels: Mapping[str, str]) -> tuple[str, ...]:
    """The group names a pod's controller labels point to, most specific first."""
    found: list[str] = []
    jobset = labels.get(JOBSET_NAME_LABEL)
    replicated = labels.get(REPLICATED_JOB_LABEL)
    if jobset and replicated == TRAINER_NODE_JOB:
        found.append(workload_group_name(TRAINJOB, jobset))  # a TrainJob's JobSet has its name
    lws, index = labels.get(LWS_NAME_LABEL), labels.get(LWS_GROUP_INDEX_LABEL)
    if lws and index:
        found.append(workload_group_name(LWS, lws, index))
    if jobset and replicated:
        found.append(workload_group_name(JOBSET, jobset, replicated))
    if jobset:
        found.append(workload_group_name(JOBSET, jobset))
    ray = labels.get(RAY_CLUSTER_LABEL)
    if ray:
        found.append(workload_group_name(RAYCLUSTER, ray))
    kubeflow = labels.get(KUBEFLOW_JOB_LABEL)
    operator = labels.get(KUBEFLOW_OPERATOR_LABEL, PYTORCH_OPERATOR)
    if kubeflow and operator == PYTORCH_OPERATOR:
        found.append(workload_group_name(PYTORCHJOB, kubeflow))
    if kubeflow and operator == MPI_OPERATOR:  # its launcher's Job's name comes below
        found.append(workload_group_name(MPIJOB, kubeflow))
    job = labels.get(JOB_NAME_LABEL) or labels.get(LEGACY_JOB_NAME_LABEL)
    if job:
        found.append(workload_group_name(JOB, job))
    return tuple(found)


def implied_role(labels: Mapping[str, str]) -> str | None:
    """The role (of a PodGroup's spec.roles) a pod's controller labels give it: a Ray pod's
    group (`headgroup` or its worker group's name), an MPIJob pod's `launcher` or `worker`.
    `phalanx.workloads` names the roles of those kinds' gangs the same way."""
    if labels.get(RAY_CLUSTER_LABEL):
        return labels.get(RAY_GROUP_LABEL)
    if labels.get(KUBEFLOW_OPERATOR_LABEL) == MPI_OPERATOR:
        return labels.get(KUBEFLOW_ROLE_LABEL)
    return None


def join_implied_groups(pods: Sequence[PodInfo], groups: Collection[GroupKey]) -> list[PodInfo]:
    """Pods that name no group by Phalanx's label join the first implied group that
    exists, also over the Kubernetes PodGroup their spec.schedulingGroup names (a queue-
    labelled Job's Phalanx gang over the basic group Kubernetes 1.37 gives every Job)."""
    joined: list[PodInfo] = []
    for pod in pods:
        if pod.implied_groups:
            pod = _join(pod, groups)
        joined.append(pod)
    return joined


def _join(pod: PodInfo, groups: Collection[GroupKey]) -> PodInfo:
    for name in pod.implied_groups:
        if GroupKey(key_of(pod.namespace, name)) in groups:
            return replace(pod, group=name)
    return pod
