"""`phalanx operator`: run the scheduler operator against a cluster until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

import structlog

from phalanx.operator.settings import Mode, OperatorConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: in-cluster, $KUBECONFIG, ~/.kube/config)")
    parser.add_argument("--namespace-scope", action="append", default=[], metavar="NAMESPACE",
                        help="only place pods of these namespaces (repeatable; default: all)")
    parser.add_argument("--mode", choices=[m.value for m in Mode], default=None,
                        help="binder: bind pods with schedulerName phalanx; gate: pin and un-gate "
                             "pods gated by scheduling.phalanx.io/gang; both (default)")
    parser.add_argument("--period", type=float, default=None,
                        help="seconds between periodic cycles (default 5)")
    parser.add_argument("--log-format", choices=["console", "json"], default="console")
    parser.add_argument("--verbose", action="store_true", help="also show Kopf's debug logs")


def configure_logging(fmt: str, verbose: bool) -> None:
    renderer = (structlog.processors.JSONRenderer() if fmt == "json"
                else structlog.dev.ConsoleRenderer(colors=False))
    structlog.configure(
        processors=[structlog.processors.add_log_level,
                    structlog.processors.TimeStamper(fmt="iso"), renderer],
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")


def config_from(args: argparse.Namespace) -> OperatorConfig:
    values: dict[str, object] = {"namespaces": tuple(args.namespace_scope)}
    if args.mode:
        values["mode"] = Mode(args.mode)
    if args.period:
        values["period_seconds"] = args.period
    return OperatorConfig(**values)  # type: ignore[arg-type]


async def _main(args: argparse.Namespace) -> int:
    from phalanx.operator.client import load_configuration
    from phalanx.operator.main import Operator

    configuration = await load_configuration(args.kubeconfig)
    operator = Operator(configuration, config_from(args))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await operator.run(stop=stop)
    return 0


def run(args: argparse.Namespace) -> int:
    configure_logging(args.log_format, args.verbose)
    return asyncio.run(_main(args))
