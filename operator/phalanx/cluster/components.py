"""Command lines of the control-plane components, and the cluster options that shape them.

Pure: these functions return argument lists and configuration; `local.LocalCluster` runs
them. Every component listens on 127.0.0.1 only, on ports chosen free at start.

The Workload API option turns on Kubernetes v1.36's gang scheduling API on every component
that knows it: the alpha feature gates below (names as in k8s.io/kubernetes v1.36.1
pkg/features/kube_features.go) on kube-apiserver, kube-controller-manager and kube-scheduler,
and the alpha API group version `scheduling.k8s.io/v1alpha2` (Workload, PodGroup) served.
"""

from __future__ import annotations

import ssl
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phalanx.cluster import pki

WORKLOAD_API_GATES = (
    "GenericWorkload",  # the Workload and PodGroup API
    "GangScheduling",  # kube-scheduler's gang plugin
    "TopologyAwareWorkloadScheduling",  # PodGroup schedulingConstraints.topology
    "WorkloadAwarePreemption",  # preemption of whole pod groups
    "WorkloadWithJob",  # the Job controller creates a Workload and PodGroup per Job
)
WORKLOAD_API_VERSION = "scheduling.k8s.io/v1alpha2"

# What a user of a cluster expects to happen without thinking of a controller: Jobs, Deployments,
# ReplicaSets and StatefulSets make their pods, deleting an owner deletes what it owns (also
# finished Jobs past their TTL), deleting a namespace deletes its contents, each namespace gets
# its `default` ServiceAccount, a PodDisruptionBudget's status says how many pods may go (the
# Eviction API refuses every eviction a budget covers until it does). Left out on purpose: the
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
)
WORKLOAD_API_CONTROLLERS = ("podgroup-protection-controller",)


@dataclass(frozen=True)
class Options:
    """Cluster-wide choices that change the components' command lines."""

    workload_api: bool = False

    def feature_gate_args(self) -> list[str]:
        if not self.workload_api:
            return []
        return ["--feature-gates=" + ",".join(f"{gate}=true" for gate in WORKLOAD_API_GATES)]


def etcd_args(etcd: Path, run_dir: Path, port: int, peer_port: int) -> list[str]:
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
        "--quota-backend-bytes=4294967296",
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
        "--max-requests-inflight=800",
        "--max-mutating-requests-inflight=400",
        "--profiling=false",
        "--v=0",
        *options.feature_gate_args(),
    ]
    if options.workload_api:
        args.append(f"--runtime-config={WORKLOAD_API_VERSION}=true")
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
