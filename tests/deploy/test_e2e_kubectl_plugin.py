"""`kubectl phalanx` against the real local cluster (32 nodes x 8 GPUs, racks of 4 nodes)."""

from __future__ import annotations

import io
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from phalanx.cluster import LocalCluster
from phalanx.cluster.binaries import binary
from phalanx.kubectl.main import main

pytestmark = pytest.mark.e2e

GPUS_PER_NODE = 8
NODES_PER_RACK = 4


def worker(name: str, group: str, gpus: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"scheduling.phalanx.io/pod-group": group}},
        "spec": {
            "schedulerName": "phalanx",
            "containers": [
                {
                    "name": "worker",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {
                        "requests": {"nvidia.com/gpu": str(gpus)},
                        "limits": {"nvidia.com/gpu": str(gpus)},
                    },
                }
            ],
        },
    }


@pytest.fixture
def waiting_gang(cluster: LocalCluster, namespace: str) -> Iterator[tuple[str, str]]:
    """A queue of 64 GPUs and a gang of 5 x 8 GPUs that must fit in one rack (32 GPUs)."""
    queue = f"q-{namespace}"
    cluster.apply(
        [
            {
                "apiVersion": "scheduling.phalanx.io/v1alpha1",
                "kind": "Queue",
                "metadata": {"name": queue},
                "spec": {
                    "capability": {"nvidia.com/gpu": "64"},
                    "guarantee": {"nvidia.com/gpu": "16"},
                },
            }
        ]
    )
    group = {
        "apiVersion": "scheduling.phalanx.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "too-big"},
        "spec": {"minMember": 5, "queue": queue, "topology": {"required": "rack"}},
    }
    cluster.apply(
        [group, *(worker(f"too-big-{i}", "too-big", 8) for i in range(5))], namespace=namespace
    )
    yield queue, namespace
    cluster.kubectl("delete", "queues.scheduling.phalanx.io", queue, "--wait=false", check=False)


@pytest.fixture
def plugin_env(cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv("PHALANX_KUBECTL", str(binary("kubectl")))
    return ["--kubeconfig", str(cluster.kubeconfig)]


def run(argv: list[str]) -> str:
    out = io.StringIO()
    assert main(argv, out=out) == 0
    return out.getvalue()


def test_explain_says_why_the_gang_waits_with_numbers(
    waiting_gang: tuple[str, str], plugin_env: list[str]
) -> None:
    queue, namespace = waiting_gang
    text = run([*plugin_env, "explain", "pg", "too-big", "-n", namespace])
    assert f"PodGroup {namespace}/too-big: queue {queue}, minMember 5" in text
    assert "5 waiting (5 needed together, requesting 40 GPUs in total)" in text
    assert "needs 40 GPUs (5 pods) within one rack" in text, text
    best = re.search(r"best rack \S+ has (\d+) GPUs free", text)
    assert best is not None, text
    assert int(best.group(1)) <= GPUS_PER_NODE * NODES_PER_RACK
    assert f"Queue {queue}: GPUs used/guarantee/capability 0/16/64" in text


def test_queues_lists_the_queue_with_its_waiting_group(
    waiting_gang: tuple[str, str], plugin_env: list[str]
) -> None:
    queue, _ = waiting_gang
    text = run([*plugin_env, "queues"])
    row = next(line for line in text.splitlines() if line.split()[0] == queue)
    assert "0/16/64" in row
    assert row.split()[-1] == "1"  # one waiting group


def test_topology_shows_every_gpu_of_the_cluster(
    cluster: LocalCluster, plugin_env: list[str], tmp_path: Path
) -> None:
    png = tmp_path / "topology.png"
    text = run([*plugin_env, "topology", "--png", str(png)])
    lines = text.splitlines()
    assert lines[0] == "NetworkTopology default"
    assert re.match(r"cluster default\s+\d+/256 GPUs free\s+\d+/32 nodes whole-free", lines[1])
    assert sum(1 for line in lines if re.search(r"[├└]─ block ", line)) == 2
    racks = [line for line in lines if re.search(r"[├└]─ rack ", line)]
    assert len(racks) == 8
    assert all(re.search(r"\d+/32 GPUs free", line) for line in racks)
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_kubectl_finds_the_plugin_on_path(cluster: LocalCluster) -> None:
    script = subprocess.run(["which", "kubectl-phalanx"], capture_output=True, text=True)
    assert script.returncode == 0, "the kubectl-phalanx console script is not installed"
    # The plugin uses the kubeconfig the way kubectl does: here from $KUBECONFIG.
    env = {
        **os.environ,
        "PHALANX_KUBECTL": str(binary("kubectl")),
        "KUBECONFIG": str(cluster.kubeconfig),
    }
    result = subprocess.run(
        [str(binary("kubectl")), "phalanx", "queues"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("QUEUE")
