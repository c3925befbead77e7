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

from cold_binaries import cold_copy
from phalanx.cluster import ClusterError, LocalCluster, binaries, processes
from phalanx.cluster.binaries import require_all

pytestmark = pytest.mark.e2e

TINY = """\
name: tiny
layout: {blocks: 1, racksPerBlock: 1, nodesPerRack: 2}
node: {gpus: 8, cpu: 64, memory: 512Gi, pods: 110}
"""


@pytest.fixture(autouse=True)
def _binaries() -> None:
    require_all()


def still_running(identities: dict[str, processes.Identity]) -> list[str]:
    return sorted(name for name, identity in identities.items() if processes.running(identity))


def cli(*args: str, timeout: float = 240.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "phalanx", "cluster", *args],
                          capture_output=True, text=True, timeout=timeout)


def test_cli_up_status_down_with_kube_scheduler_and_the_workload_api(tmp_path: Path) -> None:
    description = tmp_path / "tiny.yaml"
    description.write_text(TINY)
    run_dir, kubeconfig = tmp_path / "run", tmp_path / "kubeconfig"
    where = ["--run-dir", str(run_dir), "--kubeconfig", str(kubeconfig)]
    up = cli("up", "--cluster", str(description), "--scheduler", "--workload-api", *where)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"export KUBECONFIG={kubeconfig}" in up.stdout
        cluster = LocalCluster.attach(run_dir)
        started = processes.alive(run_dir)
        assert set(started) == {
            "etcd", "kube-apiserver", "kube-controller-manager", "kwok", "kube-scheduler"
        }
        status = cli("status", *where)
        assert status.returncode == 0 and "2 kwok nodes Ready" in status.stdout
        assert cluster.options.workload_api  # remembered for later kube-scheduler starts
        resources = cluster.kubectl("api-resources", "--api-group=scheduling.k8s.io").stdout
        assert cluster.pod_group_version in resources
        # kube-scheduler binds a default-scheduler pod onto a kwok node, where it runs.
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}
        cluster.kubectl("create", "-n", "default", "-f", "-", input=json.dumps(pod))
        cluster.kubectl("wait", "-n", "default", "pod/p", "--for=jsonpath={.status.phase}=Running",
                        "--timeout=60s", timeout=90)
    finally:
        down = cli("down", *where)
    assert down.returncode == 0, down.stdout
    assert still_running(started) == []
    assert not kubeconfig.exists()
    assert cli("status", *where).returncode == 1


def bin_dir_with(folder: Path, cold: tuple[str, ...] = (), broken: str = "") -> Path:
    """The real binaries, linked; those in `cold` copied out of the page cache; `broken`
    wrapped so that it exits at once on an unknown flag."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in binaries.NAMES:
        real = binaries.binary(name)
        (folder / name).unlink(missing_ok=True)
        if name in cold:
            cold_copy(real, folder / name)
        elif name == broken:
            (folder / name).write_text(f'#!/bin/sh\nexec {real} --no-such-flag "$@"\n')
            (folder / name).chmod(0o755)
        else:
            (folder / name).symlink_to(real)
    return folder


def test_cold_binaries_start_and_back_to_back_starts_and_stops_leave_nothing(
    tmp_path: Path,
) -> None:
    """As after a reboot: the binaries are read from disk during the exec (their command
    lines read empty meanwhile). Each start comes up, each stop ends every process."""
    run_dir = tmp_path / "run"
    spawned = ("etcd", "kube-apiserver", "kube-controller-manager", "kwok")
    for round_ in range(2):
        tools = bin_dir_with(tmp_path / f"bin-{round_}", cold=spawned)
        cluster = LocalCluster(run_dir, bin_dir=tools).start()
        try:
            started = processes.alive(run_dir)
            assert set(started) == set(spawned)
            assert cluster.is_ready()
        finally:
            cluster.stop()
        assert still_running(started) == []
        assert processes.recorded(run_dir) == {}


def test_a_failed_start_stops_what_it_had_started(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    tools = bin_dir_with(tmp_path / "bin", broken="kube-apiserver")
    with pytest.raises(ClusterError, match="kube-apiserver exited with code 1"):
        LocalCluster(run_dir, bin_dir=tools).start()
    assert processes.alive(run_dir) == {}  # etcd, started first, was stopped
    assert processes.recorded(run_dir) == {}


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
        started = processes.alive(run_dir)
        assert {name: identity.pid for name, identity in started.items()} == pids
        assert set(pids) == {"etcd", "kube-apiserver", "kube-controller-manager", "kwok"}
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    deadline = time.monotonic() + 30
    while still_running(started) and time.monotonic() < deadline:
        time.sleep(0.2)
    leftovers = still_running(started)
    LocalCluster.attach(run_dir).stop()  # clean up even if the assertion below fails
    assert leftovers == []
