"""The contenders, each run as its own process with its own identity.

Each runs as a ServiceAccount (bound to cluster-admin: rights are not what is measured)
whose requests an API Priority and Fairness FlowSchema of its own classifies, so
kube-apiserver's `apiserver_flowcontrol_dispatched_requests_total{flow_schema=...}`
counts exactly that process's requests. Everything else (kwok, this benchmark) uses the
admin token, which the built-in `exempt` schema takes.
"""

from __future__ import annotations

import base64
import os
import ssl
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from phalanx.cluster import LocalCluster, binaries, components, processes
from phalanx.cluster.ports import free_ports

IDENTITY_NAMESPACE = "phalanx-bench"
PRIORITY_LEVEL = "bench"
OPERATOR = "phalanx-operator"
SCHEDULER = "kube-scheduler"
CEILING = "bench-ceiling"  # the account of bench.e2e.ceiling (bindings only)
FLOW_PRECEDENCE = 100  # before every built-in schema but `exempt` (1)


def flow_schema_name(account: str) -> str:
    return f"bench-{account}"


def identity_objects(accounts: list[str], pod_namespace: str) -> list[dict[str, Any]]:
    """Namespaces, ServiceAccounts, cluster-admin bindings, a priority level and one
    FlowSchema per account."""
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        for name in (IDENTITY_NAMESPACE, pod_namespace)
    ]
    objects.append({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": PRIORITY_LEVEL},
        "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 500,  # most of the server's seats: never a limit here
            "limitResponse": {"type": "Queue", "queuing": {
                "queues": 64, "handSize": 8, "queueLengthLimit": 1000}},
        }},
    })
    for account in accounts:
        subject = {"kind": "ServiceAccount",
                   "serviceAccount": {"name": account, "namespace": IDENTITY_NAMESPACE}}
        objects += [
            {"apiVersion": "v1", "kind": "ServiceAccount",
             "metadata": {"name": account, "namespace": IDENTITY_NAMESPACE}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": f"bench-{account}"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                         "name": "cluster-admin"},
             "subjects": [{"kind": "ServiceAccount", "name": account,
                           "namespace": IDENTITY_NAMESPACE}]},
            {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
             "metadata": {"name": flow_schema_name(account)},
             "spec": {
                 "priorityLevelConfiguration": {"name": PRIORITY_LEVEL},
                 "matchingPrecedence": FLOW_PRECEDENCE,
                 "distinguisherMethod": {"type": "ByUser"},
                 "rules": [{
                     "subjects": [subject],
                     "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                        "clusterScope": True, "namespaces": ["*"]}],
                     "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                 }],
             }},
        ]
    return objects


def account_kubeconfig(cluster: LocalCluster, account: str) -> Path:
    """A kubeconfig under the run directory that authenticates as `account`."""
    token = cluster.kubectl("create", "token", account, "-n", IDENTITY_NAMESPACE,
                            "--duration=4h").stdout.strip()
    ca = base64.b64encode(cluster.ca_cert.read_bytes()).decode()
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "bench", "cluster": {"server": cluster.server,
                                                   "certificate-authority-data": ca}}],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": account}}],
        "current-context": "bench",
    }
    path = cluster.run_dir / f"kubeconfig.{account}"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


def start_operator(cluster: LocalCluster, kubeconfig: Path, profile: Path | None,
                   timeout: float = 300.0) -> int:
    """`python -m phalanx operator --mode binder`; returns its pid once its /readyz answers
    200 (caches listed: Kopf holds every handler back until then)."""
    python = [sys.executable]
    if profile is not None:
        python += ["-m", "cProfile", "-o", str(profile)]
    (port,) = free_ports(1)
    argv = [*python, "-m", "phalanx", "operator", f"--kubeconfig={kubeconfig}",
            "--mode=binder", "--log-format=json", "--metrics-host=127.0.0.1",
            f"--metrics-port={port}"]
    started = processes.start(OPERATOR, argv, cluster.run_dir, die_with_parent=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if started.exit_code() is not None:
            raise RuntimeError(f"the operator exited; see {started.log}")
        if _answers(f"http://127.0.0.1:{port}/readyz"):
            return started.pid
        time.sleep(0.5)
    raise RuntimeError(f"the operator was not ready within {timeout:.0f}s; see {started.log}")


def start_kube_scheduler(cluster: LocalCluster, kubeconfig: Path, qps: int, burst: int,
                         timeout: float = 60.0, binary: Path | None = None) -> int:
    """The real kube-scheduler (default profile), as `LocalCluster.start_scheduler` runs
    it but with the account's kubeconfig; returns its pid once /healthz answers. `binary`:
    another release's kube-scheduler than the cluster's (bench.dra.e2e runs 1.36's)."""
    config = cluster.run_dir / "kube-scheduler.yaml"
    config.write_text(yaml.safe_dump(components.scheduler_config(kubeconfig, qps, burst),
                                     sort_keys=False))
    (port,) = free_ports(1)
    started = processes.start(SCHEDULER, components.scheduler_args(
        binary or binaries.binary("kube-scheduler", cluster.bin_dir), config, kubeconfig, port,
        cluster.options,
    ), cluster.run_dir, die_with_parent=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if started.exit_code() is not None:
            raise RuntimeError(f"kube-scheduler exited; see {started.log}")
        if components.healthz_ok(port):
            return started.pid
        time.sleep(0.3)
    raise RuntimeError(f"kube-scheduler not healthy; see {started.log}")


def start_ceiling(cluster: LocalCluster, kubeconfig: Path, plan: Path,
                  timeout: float = 60.0) -> int:
    """`python -m bench.e2e.ceiling` binding `plan`; returns its pid once its client is set
    up (it prints `ready`, then binds at once)."""
    from bench.e2e.ceiling import READY

    argv = [sys.executable, "-m", "bench.e2e.ceiling", f"--kubeconfig={kubeconfig}",
            f"--plan={plan}"]
    root = str(Path(__file__).resolve().parents[2])  # `bench` importable from the run dir
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    started = processes.start(CEILING, argv, cluster.run_dir, die_with_parent=True,
                              env={"PYTHONPATH": path})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if READY in started.log.read_text().split():
            return started.pid
        if started.exit_code() is not None:
            raise RuntimeError(f"the ceiling contender exited; see {started.log}")
        time.sleep(0.05)
    raise RuntimeError(f"the ceiling contender was not ready within {timeout:.0f}s; "
                       f"see {started.log}")


def _answers(url: str, context: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, context=context, timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def stop_component(cluster: LocalCluster, name: str) -> None:
    processes.stop_one(cluster.run_dir, name, grace_seconds=20.0)
