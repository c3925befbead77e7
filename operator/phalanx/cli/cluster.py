"""`phalanx cluster up|down|status|dra-slices`: the local control plane, detached from the
terminal. `dra-slices` publishes the description's GPUs as DRA ResourceSlices on a running
cluster (`up` does it already for a description with `node.dra: true`; see dra_slices.py).

State lives in `.local/run` of the checkout and the kubeconfig in `.local/kubeconfig`;
`down` stops every process recorded there, including those of a crashed earlier run.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from phalanx.cluster import ClusterError, LocalCluster, dra_slices, load_description
from phalanx.cluster.binaries import BinariesMissing
from phalanx.cluster.description import DescriptionError, repository_root

ACTIONS = ("up", "down", "status", "dra-slices")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    root = repository_root(Path.cwd())
    parser.add_argument("action", choices=ACTIONS)
    parser.add_argument(
        "--cluster",
        type=Path,
        default=root / "examples" / "clusters" / "small.yaml",
        help="cluster description YAML (default: examples/clusters/small.yaml)",
    )
    parser.add_argument("--run-dir", type=Path, default=root / ".local" / "run")
    parser.add_argument("--kubeconfig", type=Path, default=root / ".local" / "kubeconfig")
    parser.add_argument(
        "--scheduler", action="store_true", help="also start the real kube-scheduler"
    )
    parser.add_argument(
        "--workload-api",
        action="store_true",
        help="serve Kubernetes' Workload API (scheduling.k8s.io: v1beta1 and v1alpha3 on 1.37, "
        "v1alpha2 on 1.36) with that release's feature gates on every component",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for nodes")


def run(args: argparse.Namespace) -> int:
    try:
        if args.action == "up":
            return _up(args)
        if args.action == "down":
            return _down(args)
        if args.action == "dra-slices":
            return _dra_slices(args)
        return _status(args)
    except (ClusterError, BinariesMissing, DescriptionError) as error:
        print(f"phalanx cluster {args.action}: {error}")
        return 1


def _up(args: argparse.Namespace) -> int:
    description = load_description(args.cluster)
    existing = LocalCluster.attach(args.run_dir)
    if existing.pids():
        if existing.is_ready():
            print(f"already running in {args.run_dir}")
            _print_reach(existing.kubeconfig)
            return 0
        print("stopping a stale cluster first")
        existing.stop()
    cluster = LocalCluster(
        args.run_dir,
        kubeconfig=args.kubeconfig,
        die_with_parent=False,
        workload_api=args.workload_api,
    )
    started = time.monotonic()
    cluster.start()
    try:
        print(f"control plane ready at {cluster.server} in {time.monotonic() - started:.1f}s")
        names = cluster.prepare(description, timeout=args.timeout)
        print(
            f"{len(names)} nodes of {description.name} ({description.gpus} GPUs) Ready "
            f"{time.monotonic() - started:.1f}s after start"
        )
        if args.scheduler:
            cluster.start_scheduler()
            print("kube-scheduler started")
        if args.workload_api:
            print("Workload API on (scheduling.k8s.io); `kubectl get podgroups` now "
                  "means the built-in kind: use `kubectl get pg` for Phalanx's")
    except BaseException:
        cluster.stop()
        raise
    _print_reach(cluster.kubeconfig)
    return 0


def _down(args: argparse.Namespace) -> int:
    cluster = LocalCluster.attach(args.run_dir)
    running = cluster.pids()
    killed = cluster.stop()
    left = cluster.pids()
    if left:
        print(f"still running: {left}")
        return 1
    if running:
        forced = f" ({', '.join(sorted(killed))} needed SIGKILL)" if killed else ""
        print(f"stopped {', '.join(sorted(running))}{forced}")
    else:
        print("nothing running")
    if running and cluster.kubeconfig.resolve() == args.kubeconfig.resolve():
        cluster.kubeconfig.unlink(missing_ok=True)
    return 0


def _dra_slices(args: argparse.Namespace) -> int:
    """Publish the description's nodes' GPUs as ResourceSlices (and the DeviceClass)."""
    description = load_description(args.cluster)
    if not description.shape.dra:
        description = dataclasses.replace(
            description, shape=dataclasses.replace(description.shape, dra=True))
    cluster = LocalCluster.attach(args.run_dir)
    if not cluster.is_ready():
        print(f"no running cluster in {args.run_dir}: run `phalanx cluster up` first")
        return 1
    slices = dra_slices.publish(cluster.rest(timeout=30.0), description)
    print(f"{slices} ResourceSlices of driver {dra_slices.DRIVER} "
          f"({description.gpus} GPUs) and DeviceClass {dra_slices.DRIVER} published")
    return 0


def _status(args: argparse.Namespace) -> int:
    cluster = LocalCluster.attach(args.run_dir)
    running = cluster.pids()
    if not running:
        print(f"not running (run dir {args.run_dir})")
        return 1
    for name, pid in sorted(running.items()):
        print(f"{name:15} pid {pid}")
    if not cluster.is_ready():
        print(f"kube-apiserver at {cluster.server} is not ready")
        return 1
    print(f"kube-apiserver {cluster.server} ready; {len(cluster.ready_nodes())} kwok nodes Ready")
    _print_reach(cluster.kubeconfig)
    return 0


def _print_reach(kubeconfig: Path) -> None:
    print(f"export KUBECONFIG={kubeconfig}; kubectl get nodes")
