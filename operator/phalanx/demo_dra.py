"""`python -m phalanx.demo_dra` (`make demo-dra`): a gang of DRA pods placed in one rack.

Starts a local control plane of DRA-only GPU nodes (examples/clusters/dra.yaml: no
nvidia.com/gpu; each node's GPUs published as a ResourceSlice of driver gpu.nvidia.com by
the kwok stand-in, phalanx/cluster/dra_slices.py), runs `phalanx operator`, applies
examples/dra/ (a ResourceClaimTemplate for 8 H100s and a PodGroup of 4 pods that must
share a rack) into namespace `demo-dra`, waits until the gang is bound, and prints each
pod's node, rack and the devices its claim was allocated. Everything it started is
stopped on the way out. Exit 0 once the gang is bound with its claims, 1 on timeout.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from phalanx.cluster import LocalCluster, load_description
from phalanx.cluster.description import repository_root
from phalanx.cluster.labels import TOPOLOGY_LEAF

NAMESPACE = "demo-dra"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    root = repository_root(Path.cwd())
    parser = argparse.ArgumentParser(prog="python -m phalanx.demo_dra", description=__doc__)
    parser.add_argument("--cluster", type=Path, default=root / "examples/clusters/dra.yaml")
    parser.add_argument("--objects", type=Path, default=root / "examples/dra")
    parser.add_argument("--run-dir", type=Path, default=root / ".local/run-dra")
    parser.add_argument("--kubeconfig", type=Path, default=root / ".local/kubeconfig-dra")
    parser.add_argument("--timeout", type=float, default=120.0)
    return parser.parse_args(argv)


def claim_rows(pods: list[dict[str, Any]], claims: list[dict[str, Any]],
               racks: dict[str, str]) -> list[str] | None:
    """One line per pod (node, rack, claim, devices), once every pod is bound with its
    claims allocated; None before."""
    by_pod = {ref["name"]: claim for claim in claims
              for ref in (claim.get("status") or {}).get("reservedFor") or []}
    rows = []
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        name, node = pod["metadata"]["name"], pod["spec"].get("nodeName")
        claim = by_pod.get(name)
        allocation = (claim or {}).get("status", {}).get("allocation")
        if not node or not allocation:
            return None
        results = allocation["devices"]["results"]
        pools = sorted({r["pool"] for r in results})
        devices = ",".join(r["device"] for r in results)
        rows.append(f"{name:12} {node:14} {racks.get(node, '?'):10} "
                    f"{claim['metadata']['name'] if claim else '':24} {'+'.join(pools)}: {devices}")
    return rows or None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cluster = LocalCluster(args.run_dir, kubeconfig=args.kubeconfig, die_with_parent=True)
    operator: subprocess.Popen[bytes] | None = None
    try:
        print("starting etcd, kube-apiserver, kube-controller-manager and kwok ...")
        cluster.start()
        names = cluster.prepare(load_description(args.cluster))
        slices = json.loads(cluster.kubectl("get", "resourceslices", "-o", "json").stdout)
        print(f"{len(names)} DRA-only nodes Ready, {len(slices['items'])} ResourceSlices of "
              "gpu.nvidia.com published (the kwok stand-in)")
        log = args.run_dir / "operator.log"
        operator = subprocess.Popen(
            [sys.executable, "-m", "phalanx", "operator", f"--kubeconfig={cluster.kubeconfig}",
             "--period=1", "--metrics-port=0"],
            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
        print(f"operator started (log: {log})")
        cluster.kubectl("create", "namespace", NAMESPACE)
        cluster.kubectl("apply", "-n", NAMESPACE, "-f", str(args.objects))
        print(f"applied {args.objects} into namespace {NAMESPACE}\n")
        return _wait(cluster, args.timeout)
    finally:
        if operator is not None and operator.poll() is None:
            os.killpg(operator.pid, signal.SIGTERM)
            operator.wait(timeout=30)
        cluster.stop()
        print("stopped")


def _wait(cluster: LocalCluster, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    nodes = json.loads(cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    racks = {n["metadata"]["name"]: n["metadata"]["labels"].get(TOPOLOGY_LEAF, "")
             for n in nodes}
    while time.monotonic() < deadline:
        pods = _items(cluster, "pods")
        rows = claim_rows(pods, _items(cluster, "resourceclaims"), racks)
        if rows:
            print(cluster.kubectl("get", "pg", "-n", NAMESPACE).stdout)
            print(f"{'POD':12} {'NODE':14} {'RACK':10} {'CLAIM':24} POOL: DEVICES")
            print("\n".join(rows))
            used = {line.split()[2] for line in rows}
            print(f"\n{len(rows)} pods bound in {len(used)} rack(s), each claim allocated "
                  "8 GPUs of its pod's node by Phalanx")
            return 0
        time.sleep(1.0)
    print(cluster.kubectl("describe", "pg", "-n", NAMESPACE).stdout)
    print(f"timed out after {timeout:g}s")
    return 1


def _items(cluster: LocalCluster, kind: str) -> list[dict[str, Any]]:
    body = json.loads(cluster.kubectl("get", kind, "-n", NAMESPACE, "-o", "json").stdout)
    return list(body["items"])


if __name__ == "__main__":
    raise SystemExit(main())
