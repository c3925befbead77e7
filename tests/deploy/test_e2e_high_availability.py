"""Two `phalanx operator` processes with leader election, as the Deployment runs them (the
real CLI, a settings file, the ServiceAccount's token): one places gangs, the standby takes
over when the leader is SIGKILLed while gangs are being submitted, and no gang is left
half placed."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.cluster import LocalCluster

from .operator_process import OperatorProcess, account_kubeconfig

pytestmark = pytest.mark.e2e

NAMESPACE = "phalanx-system"
LEASE = "phalanx-leader"
LEASE_SECONDS = 3
ELECTION = {
    "enabled": True,
    "lease_name": LEASE,
    "lease_namespace": NAMESPACE,
    "lease_duration_seconds": LEASE_SECONDS,
    "renew_deadline_seconds": 2,
    "retry_period_seconds": 0.5,
}
GROUP_LABEL = "scheduling.phalanx.io/pod-group"
GANGS = 12  # submitted while the leader dies: 4 pods x 2 GPUs each, 96 GPUs in all


def get_json(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def gang(name: str, size: int, gpus: int) -> list[dict[str, Any]]:
    group = {
        "apiVersion": "scheduling.phalanx.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": size},
    }
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{name}-{i}", "labels": {GROUP_LABEL: name}},
            "spec": {
                "schedulerName": "phalanx",
                "restartPolicy": "Never",
                "containers": [{
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"nvidia.com/gpu": str(gpus)},
                                  "limits": {"nvidia.com/gpu": str(gpus)}},
                }],
            },
        }
        for i in range(size)
    ]
    return [group, *pods]


def holder(cluster: LocalCluster) -> tuple[str, int]:
    spec = get_json(cluster, "lease", LEASE, "-n", NAMESPACE)["spec"]
    return str(spec.get("holderIdentity") or ""), int(spec.get("leaseTransitions") or 0)


def lease_time(cluster: LocalCluster, field: str) -> datetime:
    """`renewTime` or `acquireTime` of the lease as it is now."""
    spec = get_json(cluster, "lease", LEASE, "-n", NAMESPACE)["spec"]
    return datetime.fromisoformat(spec[field])


def phases(cluster: LocalCluster, namespace: str) -> dict[str, str]:
    items = get_json(cluster, "podgroups.scheduling.phalanx.io", "-n", namespace)["items"]
    return {g["metadata"]["name"]: (g.get("status") or {}).get("phase", "") for g in items}


def bound_by_gang(cluster: LocalCluster, namespace: str) -> dict[str, list[bool]]:
    gangs: dict[str, list[bool]] = {}
    for pod in get_json(cluster, "pods", "-n", namespace)["items"]:
        group = pod["metadata"]["labels"][GROUP_LABEL]
        gangs.setdefault(group, []).append(bool(pod["spec"].get("nodeName")))
    return gangs


@pytest.fixture
def replicas(installed_rbac: LocalCluster, tmp_path: Path) -> Iterator[dict[str, OperatorProcess]]:
    cluster = installed_rbac
    cluster.kubectl("delete", "lease", LEASE, "-n", NAMESPACE, "--ignore-not-found")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"leader_election": ELECTION}))
    kubeconfig = account_kubeconfig(cluster, tmp_path / "kubeconfig")
    started = {
        name: OperatorProcess(name, kubeconfig, tmp_path, env={
            "PHALANX_CONFIG": str(config), "PHALANX_LEADER_ELECTION__IDENTITY": name})
        for name in ("replica-a", "replica-b")
    }
    yield started
    for replica in started.values():
        replica.ensure_dead()
    cluster.kubectl("delete", "lease", LEASE, "-n", NAMESPACE, "--ignore-not-found")


def test_standby_takes_over_when_the_leader_dies_mid_submission(
    installed_rbac: LocalCluster, namespace: str, replicas: dict[str, OperatorProcess]
) -> None:
    cluster = installed_rbac
    first, second = replicas["replica-a"].start(), replicas["replica-b"]
    first.wait_for(lambda: first.get("/readyz") == (200, "caches synced\n"), "replica-a leads")
    assert holder(cluster)[0] == "replica-a"
    second.start()
    second.wait_for(lambda: second.get("/readyz") == (200, "standing by\n"), "standby ready")
    assert second.sample("phalanx_leader") == 0
    # A warm standby: its caches are synced before it is elected, so it can act at once.
    second.wait_for(lambda: any(r.get("event") == "caches synced; standing by until elected"
                                for r in second.records()), "standby caches synced")

    cluster.apply(gang("before", 2, 8), namespace)
    first.wait_for(lambda: phases(cluster, namespace).get("before") == "Running", "first gang")
    # Exactly one replica places gangs: the standby has bound nothing.
    assert first.sample("phalanx_leader") == 1
    assert first.sample("phalanx_bindings_total") == 2
    assert second.sample("phalanx_bindings_total") == 0

    submitted: list[str] = []
    failures: list[BaseException] = []

    def submit() -> None:
        try:
            for i in range(GANGS):
                cluster.apply(gang(f"g{i}", 4, 2), namespace)
                submitted.append(f"g{i}")
                time.sleep(0.3)
        except BaseException as error:  # reported below
            failures.append(error)

    submitter = threading.Thread(target=submit, name="submitter", daemon=True)
    submitter.start()
    second.wait_for(lambda: len(submitted) >= GANGS // 3, "some gangs submitted")
    first.kill()
    last_renewal = lease_time(cluster, "renewTime")
    second.wait_for(lambda: second.sample("phalanx_leader") == 1, "replica-b takes over")
    # Not before the dead leader's lease ran out (on the lease's own times, both written
    # with this machine's clock): a takeover earlier would have made two leaders.
    waited = (lease_time(cluster, "acquireTime") - last_renewal).total_seconds()
    assert waited >= LEASE_SECONDS, waited
    submitter.join(120)
    assert not failures, failures
    assert len(submitted) == GANGS

    wanted = {"before", *submitted}
    second.wait_for(
        lambda: all(phases(cluster, namespace).get(name) == "Running" for name in wanted),
        "every gang placed after the takeover")
    # No gang left partial: each gang has all of its pods bound (a pod can be bound only
    # once: the API server refuses a second binding).
    gangs = bound_by_gang(cluster, namespace)
    assert set(gangs) == wanted
    assert all(all(flags) for flags in gangs.values()), gangs
    assert holder(cluster) == ("replica-b", 1)
    assert (second.sample("phalanx_bindings_total") or 0) > 0  # new gangs were its work

    cluster.apply(gang("after", 2, 8), namespace)
    second.wait_for(lambda: phases(cluster, namespace).get("after") == "Running", "a new gang")

    assert second.stop() == 0
    assert holder(cluster)[0] == ""  # released on a graceful stop
