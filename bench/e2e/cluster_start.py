"""How long the local cluster takes to start, with and without kube-controller-manager.

`python -m bench.e2e.cluster_start [--rounds N] [--cluster examples/clusters/small.yaml]` starts
the control plane N times in each configuration, alternating (so both see the same machine
load), and prints the median and range of `start()` (processes up, kube-apiserver ready,
kube-controller-manager healthy) and of `prepare()` (CRDs, nodes Ready), as the test session's
`cluster` fixture runs them. A ratio, not a deadline: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from phalanx.cluster import LocalCluster, load_description

CONFIGURATIONS = {
    "etcd + kube-apiserver + kwok": {"controller_manager": False},
    "+ kube-controller-manager": {"controller_manager": True},
    "+ kube-controller-manager, Workload API": {"controller_manager": True, "workload_api": True},
}


def one_start(description_path: Path, options: dict[str, bool]) -> tuple[float, float]:
    cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="bench-start-")), **options)
    began = time.monotonic()
    try:
        cluster.start()
        started = time.monotonic()
        cluster.prepare(load_description(description_path))
        return started - began, time.monotonic() - started
    finally:
        cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cluster", type=Path, default=Path("examples/clusters/small.yaml"))
    args = parser.parse_args()
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in CONFIGURATIONS}
    for _ in range(args.rounds):
        for name, options in CONFIGURATIONS.items():
            times[name].append(one_start(args.cluster, options))
    print(f"{args.rounds} rounds, {args.cluster}; seconds, median (min-max)")
    print(f"{'configuration':42} {'start()':>18} {'start+prepare':>18}")
    for name, runs in times.items():
        starts = [start for start, _ in runs]
        totals = [start + prepare for start, prepare in runs]
        print(f"{name:42} {_spread(starts):>18} {_spread(totals):>18}")


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


if __name__ == "__main__":
    main()
