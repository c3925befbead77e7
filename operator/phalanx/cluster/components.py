"""Command lines of the control-plane components, and the cluster options that shape them.

Pure: these functions return argument lists and configuration; `local.LocalCluster` runs
them. Every component listens on 127.0.0.1 only, on ports chosen free at start.

The Workload API option turns on Kubernetes' gang scheduling API on every component that
knows it: the feature gates of the binaries' minor version (names as in k8s.io/kubernetes
pkg/features/kube_features.go of that release) on kube-apiserver, kube-controller-manager and
kube-scheduler, and the API group versions that release serves for it. The gates changed
between releases (1.37 dropped GangScheduling and WorkloadAwarePreemption, folded into
GenericWorkload, and added PodGroupPreemptionPolicy and CompositePodGroup), and a component
refuses a gate it does not know, so each supported minor has its own row.
"""

from __future__ import annotations

import ssl
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phalanx.cluster import pki


@dataclass(frozen=True, slots=True)
class WorkloadApi:
    """What one Kubernetes minor needs to serve and schedule the Workload API."""

    gates: tuple[str, ...]
    versions: tuple[str, ...]  # scheduling.k8s.io versions turned on by --runtime-config


WORKLOAD_API = {
    36: WorkloadApi(
        gates=(
            "GenericWorkload",  # the Workload and PodGroup API
            "GangScheduling",  # kube-scheduler's gang plugin
            "TopologyAwareWorkloadScheduling",  # PodGroup schedulingConstraints.topology
            "WorkloadAwarePreemption",  # preemption of whole pod groups
            "WorkloadWithJob",  # the Job controller creates a Workload and PodGroup per Job
        ),
        versions=("scheduling.k8s.io/v1alpha2",),
    ),
    37: WorkloadApi(
        gates=(
            "GenericWorkload",  # beta: the Workload and PodGroup API, gang scheduling
            "TopologyAwareWorkloadScheduling",  # PodGroup schedulingConstraints.topology
            "WorkloadWithJob",  # a Job's spec.scheduling makes its Workload and PodGroup
            "PodGroupPreemptionPolicy",  # a PodGroup's own priority and preemptionPolicy
            "CompositePodGroup",  # nested gangs (v1alpha3 CompositePodGroup)
            "DRAWorkloadResourceClaims",  # a PodGroup's spec.resourceClaims (beta, off)
        ),
        versions=("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3"),
    ),
}
SUPPORTED_MINORS = tuple(sorted(WORKLOAD_API))


class UnsupportedVersion(ValueError):
    """The binaries are of a Kubernetes minor whose Workload API gates are not known here."""


def workload_api_for(minor: int) -> WorkloadApi:
    if minor not in WORKLOAD_API:
        known = ", ".join(f"1.{m}" for m in SUPPORTED_MINORS)
        raise UnsupportedVersion(
            f"the Workload API option knows Kubernetes {known}; these binaries are 1.{minor}")
    return WORKLOAD_API[minor]


def minor_of(version: str) -> int:
    """`v1.37.2` (what `kube-apiserver --version` ends with) -> 37."""
    parts = version.lstrip("v").split(".")
    if len(parts) < 2 or parts[0] != "1" or not parts[1].isdigit():
        raise UnsupportedVersion(f"cannot read a Kubernetes version from {version!r}")
    return int(parts[1])

# What a user of a cluster expects to happen without thinking of a controller: Jobs, Deployments,
# ReplicaSets and StatefulSets make their pods, deleting an owner deletes what it owns (also
# finished Jobs past their TTL), deleting a namespace deletes its contents, each namespace gets
# its `default` ServiceAccount, a PodDisruptionBudget's status says how many pods may go (the
# Eviction API refuses every eviction a budget covers until it does), a pod's ResourceClaims
# are made from its templates and deallocated when it ends (DRA). Left out on purpose: the
# node lifecycle and taint eviction controllers (kwok nodes under a loaded test machine would
# turn NotReady and be evicted at random), endpoints and everything storage, certificates or
# DaemonSet related.
CONTROLLERS = (
    "garbage-collector-controller",
    "namespace-controller",
    "job-controller",
    "ttl-after-finished-controller",
    "replicaset-controller",
    "deployment-controller",
    "statefulset-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "disruption-controller",
    "resourceclaim-controller",  # DRA: a pod's claims made from templates, freed when it ends
)
WORKLOAD_API_CONTROLLERS = ("podgroup-protection-controller",)


@dataclass(frozen=True)
class Options:
    """Cluster-wide choices that change the components' command lines."""

    workload_api: bool = False
    minor: int = SUPPORTED_MINORS[-1]  # the Kubernetes minor version of the binaries
    # kube-apiserver writes an audit line per pods/binding (logs/audit.log): when the API
    # server answered each binding, to the microsecond, whoever sent it (bench.e2e)
    audit_bindings: bool = False
    # the settings of a large cluster (LARGE_APISERVER_ARGS, LARGE_ETCD_ARGS)
    large: bool = False

    def feature_gate_args(self) -> list[str]:
        if not self.workload_api:
            return []
        gates = workload_api_for(self.minor).gates
        return ["--feature-gates=" + ",".join(f"{gate}=true" for gate in gates)]

    def runtime_config_args(self) -> list[str]:
        if not self.workload_api:
            return []
        versions = workload_api_for(self.minor).versions
        return ["--runtime-config=" + ",".join(f"{v}=true" for v in versions)]


# A large cluster's settings (options.large; 12,500 kwok nodes, bench-e2e-12500):
# - kube-apiserver: 3,000 + 1,000 requests in flight (with API Priority and Fairness, their
#   sum is the concurrency its priority levels share; the defaults are 400 + 200), and
#   DeleteCollection with 8 workers (a namespace of 50,000 pods goes in one go);
# - etcd: an 8 GiB backend quota (etcd's suggested maximum; its default is 2 GiB, this
#   cluster's usual 4 GiB), history compacted by kube-apiserver every 5 minutes as always.
LARGE_APISERVER_ARGS = ("--max-requests-inflight=3000", "--max-mutating-requests-inflight=1000",
                        "--delete-collection-workers=8")
LARGE_ETCD_ARGS = ("--quota-backend-bytes=8589934592",)
AUDIT_POLICY_FILE = "audit-policy.yaml"
AUDIT_LOG_FILE = "audit.log"
# Only bindings, at Metadata level (who bound which pod, the reply's code and when), once
# the reply is complete: the API server writes nothing else.
AUDIT_POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived", "ResponseStarted", "Panic"],
    "rules": [
        {"level": "Metadata", "verbs": ["create"],
         "resources": [{"group": "", "resources": ["pods/binding"]}]},
        {"level": "None"},
    ],
}


def audit_args(run_dir: Path) -> list[str]:
    """Audit flags: batched (written off the request path within a second), JSON lines."""
    return [
        f"--audit-policy-file={run_dir / AUDIT_POLICY_FILE}",
        f"--audit-log-path={run_dir / 'logs' / AUDIT_LOG_FILE}",
        "--audit-log-format=json",
        "--audit-log-mode=batch",
        "--audit-log-batch-max-wait=1s",
        "--audit-log-maxsize=0",
    ]


def etcd_args(etcd: Path, run_dir: Path, port: int, peer_port: int,
              large: bool = False) -> list[str]:
    peer = f"http://127.0.0.1:{peer_port}"
    return [
        str(etcd),
        "--name=phalanx",
        f"--data-dir={run_dir / 'etcd'}",
        f"--listen-client-urls=http://127.0.0.1:{port}",
        f"--advertise-client-urls=http://127.0.0.1:{port}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=phalanx={peer}",
        "--unsafe-no-fsync",  # throwaway data: durability is not worth the latency
        "--log-level=warn",
        *(LARGE_ETCD_ARGS if large else ("--quota-backend-bytes=4294967296",)),
    ]


def apiserver_args(
    apiserver: Path,
    run_dir: Path,
    credentials: pki.Credentials,
    etcd_port: int,
    port: int,
    options: Options,
) -> list[str]:
    """The ServiceAccount admission plugin stays off even with the controller-manager: a pod
    created in a namespace before its `default` ServiceAccount exists would be refused, a race
    tests would lose now and then; pods therefore get no token volume. TaintNodesByCondition
    is off because only the node lifecycle controller (not run) would lift its taints."""
    args = [
        str(apiserver),
        f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        # no `kubernetes` Service endpoints: nothing here reaches the API server through them,
        # and 1.37 refuses a loopback advertise address with the endpoint reconciler on
        "--endpoint-reconciler-type=none",
        f"--secure-port={port}",
        f"--cert-dir={run_dir / 'pki'}",
        f"--tls-cert-file={credentials.serving_cert}",
        f"--tls-private-key-file={credentials.serving_key}",
        f"--client-ca-file={credentials.ca_cert}",
        f"--token-auth-file={credentials.token_file}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={credentials.service_account_public_key}",
        f"--service-account-signing-key-file={credentials.service_account_key}",
        "--api-audiences=https://kubernetes.default.svc.cluster.local",
        "--authorization-mode=Node,RBAC",
        "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
        "--service-cluster-ip-range=10.96.0.0/16",
        *(LARGE_APISERVER_ARGS if options.large else ("--max-requests-inflight=800",
                                                     "--max-mutating-requests-inflight=400")),
        "--profiling=false",
        "--v=0",
        *options.feature_gate_args(),
        *options.runtime_config_args(),
        *(audit_args(run_dir) if options.audit_bindings else ()),
    ]
    return args


def controller_manager_args(
    binary: Path, kubeconfig: Path, credentials: pki.Credentials, port: int, options: Options
) -> list[str]:
    """kube-controller-manager as the admin (no per-controller accounts: one client, one
    token, nothing to wait for). The service-account key lets the token controller work."""
    controllers = CONTROLLERS + (WORKLOAD_API_CONTROLLERS if options.workload_api else ())
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        "--leader-elect=false",
        f"--controllers={','.join(controllers)}",
        f"--service-account-private-key-file={credentials.service_account_key}",
        f"--root-ca-file={credentials.ca_cert}",
        "--kube-api-qps=200",
        "--kube-api-burst=400",
        "--profiling=false",
        "--v=1",
        *options.feature_gate_args(),
    ]


def scheduler_args(
    binary: Path, config: Path, kubeconfig: Path, port: int, options: Options
) -> list[str]:
    return [
        str(binary),
        f"--config={config}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--v=1",
        *options.feature_gate_args(),
    ]


def scheduler_config(kubeconfig: Path, qps: int, burst: int) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": qps, "burst": burst},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": "default-scheduler"}],
    }


def healthz_ok(port: int) -> bool:
    """A component's /healthz on 127.0.0.1 answers 200."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the components serve throwaway self-signed certs
    try:
        url = f"https://127.0.0.1:{port}/healthz"
        with urllib.request.urlopen(url, context=context, timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False
