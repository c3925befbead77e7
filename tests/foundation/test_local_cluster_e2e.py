"""Lifecycle of separate, short-lived control planes: the CLI, kube-scheduler, teardown."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from phalanx.cluster import LocalCluster
from phalanx.cluster.binaries import require_all
from phalanx.cluster.processes import is_ours

pytestmark = pytest.mark.e2e

TINY = """\
name: tiny
layout: {blocks: 1, racksPerBlock: 1, nodesPerRack: 2}
node: {gpus: 8, cpu: 64, memory: 512Gi, pods: 110}
"""


@pytest.fixture(autouse=True)
def _binaries() -> None:
    require_all()


def alive(pids: dict[str, int], run_dir: Path) -> dict[str, int]:
    return {name: pid for name, pid in pids.items() if is_ours(pid, run_dir)}


def cli(*args: str, timeout: float = 240.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "phalanx", "cluster", *args],
                          capture_output=True, text=True, timeout=timeout)


def test_cli_up_status_down_with_kube_scheduler(tmp_path: Path) -> None:
    description = tmp_path / "tiny.yaml"
    description.write_text(TINY)
    run_dir, kubeconfig = tmp_path / "run", tmp_path / "kubeconfig"
    where = ["--run-dir", str(run_dir), "--kubeconfig", str(kubeconfig)]
    up = cli("up", "--cluster", str(description), "--scheduler", *where)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"export KUBECONFIG={kubeconfig}" in up.stdout
        cluster = LocalCluster.attach(run_dir)
        pids = cluster.pids()
        assert set(pids) == {"etcd", "kube-apiserver", "kwok", "kube-scheduler"}
        status = cli("status", *where)
        assert status.returncode == 0 and "2 kwok nodes Ready" in status.stdout
        # kube-scheduler binds a default-scheduler pod onto a kwok node, where it runs.
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}
        cluster.kubectl("create", "-n", "default", "-f", "-", input=json.dumps(pod))
        cluster.kubectl("wait", "-n", "default", "pod/p", "--for=jsonpath={.status.phase}=Running",
                        "--timeout=60s", timeout=90)
    finally:
        down = cli("down", *where)
    assert down.returncode == 0, down.stdout
    assert alive(pids, run_dir) == {}
    assert not kubeconfig.exists()
    assert cli("status", *where).returncode == 1


def test_cluster_processes_die_with_the_process_that_started_them(tmp_path: Path) -> None:
    """A killed test session (SIGKILL, no teardown) leaves no control plane behind."""
    run_dir = tmp_path / "run"
    script = (
        "import json, sys, time\n"
        "from phalanx.cluster import LocalCluster\n"
        f"cluster = LocalCluster({str(run_dir)!r}).start()\n"
        "print(json.dumps(cluster.pids()), flush=True)\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             env={**os.environ})
    try:
        assert owner.stdout is not None
        pids = json.loads(owner.stdout.readline())
        assert set(pids) == {"etcd", "kube-apiserver", "kwok"}
        assert alive(pids, run_dir) == pids
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    deadline = time.monotonic() + 30
    while alive(pids, run_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    leftovers = alive(pids, run_dir)
    LocalCluster.attach(run_dir).stop()  # clean up even if the assertion below fails
    assert leftovers == {}
