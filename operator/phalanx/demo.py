"""`python -m phalanx.demo [--interactive] --cluster FILE`: cluster, operator, demo gangs.

Starts the local control plane (or reuses one `phalanx cluster up` left running), the real
JobSet, LeaderWorkerSet, Kubeflow Trainer (v2), training-operator (v1), KubeRay and
mpi-operator (v2) controllers on it (built by hack/controllers.sh the first time, and run as
the end-to-end tests run them, so that the files of examples/workloads/ apply;
`--no-controllers` skips them), runs
`phalanx operator` as a subprocess, applies examples/demo/ into namespace `demo`, and shows
`kubectl get pg` until every group reached what its `demo.phalanx.io/expect` annotation
says (Running with all pods on nodes, or Pending with a reason).
Interactive: keeps refreshing until Ctrl-C. Otherwise: exits 0 once the state is
reached, 1 on timeout. Everything it started is stopped on the way out.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from phalanx.cluster import LocalCluster, load_description, workload_controllers
from phalanx.cluster.description import repository_root
from phalanx.core.model.names import group_name

NAMESPACE = "demo"
OPERATOR_NAMESPACE = "phalanx-system"  # the leader election Lease's (settings' default)
EXPECT = "demo.phalanx.io/expect"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    root = repository_root(Path.cwd())
    parser = argparse.ArgumentParser(prog="python -m phalanx.demo", description=__doc__)
    parser.add_argument("--cluster", type=Path, default=root / "examples/clusters/small.yaml")
    parser.add_argument("--interactive", action="store_true")
    parser.add_argument("--demo", type=Path, default=root / "examples/demo")
    parser.add_argument("--run-dir", type=Path, default=root / ".local/run")
    parser.add_argument("--kubeconfig", type=Path, default=root / ".local/kubeconfig")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--refresh", type=float, default=2.0)
    parser.add_argument("--no-controllers", dest="controllers", action="store_false",
                        help="do not start the workload controllers (JobSet, LWS, Kubeflow, "
                             "KubeRay, mpi-operator)")
    return parser.parse_args(argv)


def expectation_met(groups: list[dict[str, Any]], pods: list[dict[str, Any]]) -> tuple[bool, str]:
    """Every group is as its annotation expects; the text says what is still missing."""
    bound: dict[str, int] = {}
    for pod in pods:
        meta = pod["metadata"]
        labels, notes = meta.get("labels") or {}, meta.get("annotations") or {}
        named = group_name(labels, notes)
        if named and pod["spec"].get("nodeName") and pod["status"].get("phase") == "Running":
            bound[named] = bound.get(named, 0) + 1
    missing = []
    for group in groups:
        name = group["metadata"]["name"]
        expect = (group["metadata"].get("annotations") or {}).get(EXPECT, "Running")
        status = group.get("status") or {}
        phase = status.get("phase")
        if expect == "Running":
            if phase != "Running" or bound.get(name, 0) < group["spec"]["minMember"]:
                missing.append(f"{name}: {phase}, {bound.get(name, 0)} running")
        else:
            reasons = [c for c in status.get("conditions") or []
                       if c["type"] == "Unschedulable" and c["status"] == "True"]
            if phase != "Pending" or not reasons or bound.get(name):
                missing.append(f"{name}: {phase}, waiting for an Unschedulable reason")
    return (not missing and bool(groups)), "; ".join(missing)


# The admission webhooks on loopback, registered by the operator itself (README: Admission
# webhooks): a Job written for kube-scheduler, with only the queue label, runs as a gang here.
WEBHOOK_ENV = {
    "PHALANX_WEBHOOK__ENABLED": "true",
    "PHALANX_WEBHOOK__REGISTER_CONFIGURATIONS": "true",
    "PHALANX_WEBHOOK__HOST": "127.0.0.1",
    "PHALANX_WEBHOOK__PORT": "0",
}


class Demo:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.cluster: LocalCluster | None = None
        self.owned_cluster = False
        self.operator: subprocess.Popen[bytes] | None = None
        self.controllers: list[workload_controllers.Running] = []

    def start(self) -> None:
        args = self.args
        existing = LocalCluster.attach(args.run_dir)
        if existing.pids() and existing.is_ready():
            print(f"using the cluster already running in {args.run_dir}")
            self.cluster = existing
        else:
            if existing.pids():
                existing.stop()
            print("starting etcd, kube-apiserver and kwok ...")
            self.cluster = LocalCluster(args.run_dir, kubeconfig=args.kubeconfig,
                                        die_with_parent=True)
            self.owned_cluster = True
            self.cluster.start()
            names = self.cluster.prepare(load_description(args.cluster))
            print(f"{len(names)} kwok nodes Ready; CRDs and NetworkTopology installed")
        self.cluster.install_crds()
        if args.controllers:
            print("starting the JobSet, LeaderWorkerSet, Kubeflow Trainer, training-operator, "
                  "KubeRay and mpi-operator controllers (hack/controllers.sh builds them the "
                  "first time: minutes) ...")
            self.controllers = workload_controllers.start_missing(self.cluster)
            print("controllers running: " + ", ".join(workload_controllers.ALL))
        log = args.run_dir / "operator.log"
        print(f"starting the operator (log: {log})")
        # Leader election as installed (manifests/): its Lease names the operator and its
        # version, which `kubectl phalanx install-check` shows.
        self.kubectl("create", "namespace", OPERATOR_NAMESPACE, check=False)
        # mpi-operator's health check holds port 8080 (compiled in), the operator's default
        # metrics port: with the controllers, its metrics go to a free port (in its log).
        metrics = ["--metrics-port=0"] if args.controllers else []
        self.operator = subprocess.Popen(
            [sys.executable, "-m", "phalanx", "operator", f"--kubeconfig={self.cluster.kubeconfig}",
             "--period=2", "--leader-elect", *metrics],
            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, **WEBHOOK_ENV},
        )
        self.kubectl("create", "namespace", NAMESPACE, check=False)
        self.kubectl("apply", "-n", NAMESPACE, "-f", str(args.demo))
        print(f"applied {args.demo} into namespace {NAMESPACE}\n")

    def kubectl(self, *argv: str, check: bool = True) -> str:
        assert self.cluster is not None
        return self.cluster.kubectl(*argv, check=check).stdout

    def state(self) -> tuple[bool, str]:
        groups = json.loads(self.kubectl("get", "pg", "-n", NAMESPACE, "-o", "json"))["items"]
        pods = json.loads(self.kubectl("get", "pods", "-n", NAMESPACE, "-o", "json"))["items"]
        return expectation_met(groups, pods)

    def watch(self) -> int:
        deadline = time.monotonic() + self.args.timeout
        reached = False
        while True:
            if self.operator is not None and self.operator.poll() is not None:
                print(f"the operator exited with {self.operator.returncode}")
                return 1
            table = self.kubectl("get", "pg", "-n", NAMESPACE)
            reached, missing = self.state()
            if self.args.interactive:
                print("\033[2J\033[H" + time.strftime("%H:%M:%S") + "  kubectl get pg -n demo"
                      + "  (Ctrl-C stops everything)\n\n" + table)
                print("demo state reached" if reached else f"waiting: {missing}")
            elif reached:
                print(table)
                print(self.kubectl("describe", "pg", "-n", NAMESPACE, "too-big"))
                print("demo state reached")
                return 0
            elif time.monotonic() > deadline:
                print(table)
                print(f"timed out after {self.args.timeout:g}s: {missing}")
                return 1
            time.sleep(self.args.refresh)

    def stop(self) -> None:
        if self.operator is not None and self.operator.poll() is None:
            os.killpg(self.operator.pid, signal.SIGTERM)
            try:
                self.operator.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.operator.pid, signal.SIGKILL)
                self.operator.wait()
        if self.cluster is not None and not self.owned_cluster:
            for running in reversed(self.controllers):  # a cluster we only borrowed
                workload_controllers.stop(self.cluster, running)
        if self.cluster is not None and self.owned_cluster:
            self.cluster.stop()
        print("stopped")


def main(argv: list[str] | None = None) -> int:
    demo = Demo(parse_args(argv))
    try:
        demo.start()
        return demo.watch()
    except KeyboardInterrupt:
        return 0
    finally:
        with contextlib.suppress(KeyboardInterrupt):
            demo.stop()


if __name__ == "__main__":
    raise SystemExit(main())
