"""`kubectl phalanx`: what the Phalanx scheduler sees and decides, from the live cluster.

  kubectl phalanx queues                       usage of each queue vs guarantee and capability
  kubectl phalanx explain pg NAME [-n NS]      why a PodGroup waits, with the numbers
  kubectl phalanx topology [--png FILE]        the domain tree with free/total GPUs
  kubectl phalanx install-check                is Phalanx installed and working? (exit 1: no)

Installed as the `kubectl-phalanx` console script, so kubectl finds it as a plugin.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from phalanx.core.cycle import run_cycle
from phalanx.core.model.config import SchedulerConfig
from phalanx.core.parse import snapshot_from_objects
from phalanx.core.snapshot.picture import Snapshot

if TYPE_CHECKING:
    from phalanx.config import Settings
from phalanx.kubectl.fetch import (
    Kubectl,
    PluginError,
    Runner,
    cluster_objects,
    default_binary,
    pod_group,
    run_process,
)

GROUP_WORDS = {
    "pg",
    "podgroup",
    "podgroups",
    "podgroup.scheduling.phalanx.io",
    "podgroups.scheduling.phalanx.io",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubectl phalanx",
        description="Inspect the Phalanx gang scheduler on the current cluster.",
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: as kubectl)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument(
        "--config",
        type=Path,
        help="Phalanx settings file, so the plan uses the operator's scoring (default: defaults)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("queues", help="each queue's usage against guarantee and capability")
    explain = sub.add_parser("explain", help="why a PodGroup waits")
    explain.add_argument("kind", help="pg (or podgroup); `pg/NAME` also works")
    explain.add_argument("name", nargs="?", help="the PodGroup's name")
    explain.add_argument("-n", "--namespace", help="its namespace (default: the context's)")
    topology = sub.add_parser("topology", help="the domain tree with free and total GPUs")
    topology.add_argument("--name", default=None, help="NetworkTopology (default: default)")
    depth = topology.add_mutually_exclusive_group()
    depth.add_argument("--level", help="show domains down to this level")
    depth.add_argument("--all-levels", action="store_true", help="down to single nodes")
    topology.add_argument("--png", type=Path, help="also draw the tree into this PNG file")
    check = sub.add_parser(
        "install-check",
        help="CRDs, webhooks and their certificates, the operator's leader and version, "
        "workload kinds, nodes and topology levels; exit 1 if anything failed",
    )
    check.add_argument("--cert-warn-days", type=float, default=None, metavar="DAYS",
                       help="warn when a webhook certificate expires sooner (default 14)")
    check.add_argument("--crds", type=Path, default=None, metavar="DIR",
                       help="the CRDs to compare with (default: crds/ of this checkout)")
    return parser


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, runner: Runner | None = None
) -> int:
    """Run the plugin; `runner` replaces the kubectl subprocess (tests)."""
    out = out if out is not None else sys.stdout
    args = build_parser().parse_args(argv)
    kubectl = Kubectl(default_binary(), args.kubeconfig, args.context, runner or run_process)
    try:
        config = _scheduler_config(args.config)
        if args.command == "queues":
            return _queues(kubectl, out)
        if args.command == "explain":
            return _explain(kubectl, args, config, out)
        if args.command == "install-check":
            return _install_check(kubectl, args, out)
        return _topology(kubectl, args, config, out)
    except PluginError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


def _scheduler_config(path: Path | None) -> SchedulerConfig:
    if path is None:
        return SchedulerConfig()
    return _settings(path).scheduler_config()


def _settings(path: Path) -> Settings:
    from phalanx.config import SettingsError, load_settings

    try:
        return load_settings(path, env={})
    except SettingsError as error:
        raise PluginError(str(error)) from None


def _install_check(kubectl: Kubectl, args: argparse.Namespace, out: TextIO) -> int:
    """Exit 1 when any check failed, so scripts can gate on it."""
    from dataclasses import replace
    from datetime import UTC, datetime

    from phalanx.config.settings import LeaderElection
    from phalanx.kubectl.install_check import failed, format_report, install_report
    from phalanx.kubectl.install_facts import read_facts

    election = _settings(args.config).leader_election if args.config else LeaderElection()
    crds = args.crds
    if crds is None:
        from phalanx.cluster.local import CRD_DIR

        crds = CRD_DIR
    facts = read_facts(kubectl, election, crds)
    if args.cert_warn_days is not None:
        facts = replace(facts, warn_days=args.cert_warn_days)
    checks = install_report(facts, datetime.now(UTC))
    print(format_report(checks), file=out)
    return 1 if failed(checks) else 0


def _snapshot(kubectl: Kubectl) -> Snapshot:
    return snapshot_from_objects(cluster_objects(kubectl), strict=False)


def _queues(kubectl: Kubectl, out: TextIO) -> int:
    from phalanx.kubectl.queues import format_queues, queue_rows

    print(format_queues(queue_rows(_snapshot(kubectl))), file=out)
    return 0


def _explain(
    kubectl: Kubectl, args: argparse.Namespace, config: SchedulerConfig, out: TextIO
) -> int:
    from phalanx.kubectl.explain import explain_group

    kind, _, name = str(args.kind).partition("/")
    name = name or args.name
    if kind.lower() not in GROUP_WORDS or not name:
        raise PluginError("usage: kubectl phalanx explain pg NAME [-n NAMESPACE]")
    group = pod_group(kubectl, name, args.namespace)
    snapshot = _snapshot(kubectl)
    result = run_cycle(snapshot, config, now=time.time(), estimate=True)
    print(explain_group(group, snapshot, result), file=out)
    return 0


def _topology(
    kubectl: Kubectl, args: argparse.Namespace, config: SchedulerConfig, out: TextIO
) -> int:
    from phalanx.kubectl.topology import (
        TopologyNotFound,
        default_depth,
        domain_rows,
        format_tree,
        level_depth,
    )

    snapshot = _snapshot(kubectl)
    name = args.name or config.default_topology
    try:
        if args.all_levels:
            depth = None
        elif args.level:
            depth = level_depth(snapshot, name, args.level)
        else:
            depth = default_depth(snapshot, name) if name in snapshot.index.topologies else None
        rows = domain_rows(snapshot, name, depth)
    except TopologyNotFound as error:
        raise PluginError(str(error)) from None
    print(f"NetworkTopology {name}", file=out)
    print(format_tree(rows), file=out)
    if args.png is not None:
        from phalanx.kubectl.drawing import draw_png

        draw_png(rows, args.png, f"NetworkTopology {name}")
        print(f"drew {args.png}", file=out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
