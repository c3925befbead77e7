"""`phalanx operator`: run the scheduler operator against a cluster until SIGINT/SIGTERM.

Settings come from `phalanx.config` (see its docs); precedence, highest first: command-line
flags, `PHALANX_*` environment variables, the settings file (`--config` or
`$PHALANX_CONFIG`), defaults. Exit status: 0 stopped, 1 deposed as leader (restart as a
follower), 2 invalid settings, an unusable kubeconfig or the metrics port cannot be bound.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from phalanx.config import Settings, SettingsError, load_settings
from phalanx.config.settings import CONFIG_PATH_ENV, ENV_PREFIX

EXIT_INVALID = 2
LEADER_ENV = f"{ENV_PREFIX}LEADER_ELECTION"

EPILOG = f"""\
Settings (phalanx.config.Settings), highest precedence first:
  1. the flags above
  2. environment variables {ENV_PREFIX}<SETTING>, nested with "__"
     (e.g. {ENV_PREFIX}LEADER_ELECTION__ENABLED=true)
  3. the YAML settings file: --config, else ${CONFIG_PATH_ENV}
  4. defaults
Without a settings file, leader election is off unless {ENV_PREFIX}LEADER_ELECTION__* or
--leader-elect turns it on (a bare `phalanx operator` needs no Lease); with a file it
defaults to on, as in the shipped ConfigMap.
An invalid setting stops startup with exit status 2 and names the setting.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument("--config", default=None, metavar="FILE",
                        help=f"settings file (default: ${CONFIG_PATH_ENV}, else none)")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: in-cluster, $KUBECONFIG, ~/.kube/config)")
    parser.add_argument("--namespace-scope", action="append", default=[], metavar="NAMESPACE",
                        help="only place pods of these namespaces (repeatable; setting "
                             "namespaces; default: all)")
    parser.add_argument("--mode", choices=["binder", "gate", "both"], default=None,
                        help="binder: bind pods with schedulerName phalanx; gate: pin and un-gate "
                             "pods gated by scheduling.phalanx.io/gang; both (setting mode; "
                             "default both)")
    parser.add_argument("--period", type=float, default=None,
                        help="seconds between periodic cycles (setting cycle_period_seconds; "
                             "default 5)")
    parser.add_argument("--metrics-host", default=None,
                        help="address of /metrics, /healthz, /readyz (setting metrics_host)")
    parser.add_argument("--metrics-port", type=int, default=None,
                        help="port of /metrics, /healthz, /readyz; 0 picks a free one "
                             "(setting metrics_port; default 8080)")
    parser.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=None,
                        help="campaign for the leader Lease before scheduling "
                             "(setting leader_election.enabled)")
    parser.add_argument("--log-format", choices=["console", "json"], default=None,
                        help="setting log_format (default json)")
    parser.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        default=None, help="setting log_level (default INFO)")
    parser.add_argument("--verbose", action="store_true",
                        help="log level DEBUG, including Kopf's own logs")


FLAGS: dict[str, str] = {  # argparse dest -> setting it overrides
    "mode": "mode",
    "period": "cycle_period_seconds",
    "metrics_host": "metrics_host",
    "metrics_port": "metrics_port",
    "log_format": "log_format",
    "log_level": "log_level",
}


def flag_values(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the command line sets (only flags actually given)."""
    values = {setting: getattr(args, dest) for dest, setting in FLAGS.items()
              if getattr(args, dest) is not None}
    if args.namespace_scope:
        values["namespaces"] = tuple(args.namespace_scope)
    if args.verbose:
        values["log_level"] = "DEBUG"
    if args.leader_elect is not None:
        values["leader_election"] = {"enabled": args.leader_elect}
    return values


def settings_from(args: argparse.Namespace, environ: Mapping[str, str]) -> Settings:
    """Defaults < file < environment < flags; raises `SettingsError` naming a bad setting."""
    path = args.config or environ.get(CONFIG_PATH_ENV) or None
    settings = load_settings(path, environ)
    values = settings.model_dump()
    if path is None and not any(key.upper().startswith(LEADER_ENV) for key in environ):
        values["leader_election"]["enabled"] = False  # a bare run by hand: no Lease needed
    for key, value in flag_values(args).items():
        if isinstance(value, dict):
            values[key] = {**values[key], **value}
        else:
            values[key] = value
    try:
        settings = Settings(**values)
    except ValidationError as err:
        raise SettingsError(describe_flag_errors(err)) from None
    return settings


def describe_flag_errors(err: ValidationError) -> str:
    """Name the setting and the flag that set it (file and environment were checked before)."""
    flags = {setting: "--" + dest.replace("_", "-") for dest, setting in FLAGS.items()}
    flags |= {"namespaces": "--namespace-scope", "leader_election": "--leader-elect"}
    lines = []
    for error in err.errors(include_url=False):
        if error["type"] == "value_error":  # a cross-field check; its message names the setting
            lines.append(f"{error['ctx']['error']} (with the command-line flags)")
            continue
        name = ".".join(str(part) for part in error["loc"])
        flag = flags.get(str(error["loc"][0]) if error["loc"] else "", "the command line")
        lines.append(f"{name}: {error['msg'].lower()} (got {error['input']!r} from {flag})")
    return "; ".join(lines)


def quiet_libraries(level: str) -> None:
    """Kopf and the HTTP client log every watch event at INFO; keep them for DEBUG runs."""
    if level != "DEBUG":
        for name in ("kopf", "aiohttp", "asyncio"):
            logging.getLogger(name).setLevel(logging.WARNING)


class PortInUse(RuntimeError):
    """The metrics server cannot listen where the settings say."""


class NoClusterConfig(RuntimeError):
    """The kubeconfig (or in-cluster account) cannot be read."""


def default_identity() -> str:
    """The pod name in a cluster (hostname); the pid tells replicas on one machine apart."""
    return f"{socket.gethostname()}-{os.getpid()}"


def liveness_limit(settings: Settings) -> float:
    """Silence of the scheduling loop after which /healthz fails (a cycle runs every period)."""
    return max(120.0, 20 * settings.cycle_period_seconds)


async def serve(settings: Settings, kubeconfig: str | None) -> int:
    """Metrics server, then stand by or lead until stopped; the exit status of the replica."""
    from phalanx.observe import Health, Metrics, start_http_server

    metrics, health = Metrics(), Health(stale_after_seconds=liveness_limit(settings))
    host, port = settings.metrics_host, settings.metrics_port
    try:
        server = await start_http_server(metrics, health, host, port)
    except OSError as err:
        raise PortInUse(
            f"metrics_port: cannot listen on {host}:{port}: {err.strerror or err} (choose "
            "another with metrics_port in the settings file, PHALANX_METRICS_PORT or "
            "--metrics-port; 0 picks a free port)") from None
    log().info("serving metrics, health and readiness", host=server.host, port=server.port)
    try:
        return await replica(settings, kubeconfig, metrics, health)
    finally:
        await server.close()


async def replica(settings: Settings, kubeconfig: str | None, metrics: Any, health: Any) -> int:
    import yaml
    from kubernetes_asyncio import client as k8s
    from kubernetes_asyncio.config import ConfigException

    from phalanx.leader import ThreadedElector, run_replica
    from phalanx.operator.kube.client import KubeApi, load_configuration
    from phalanx.operator.main import Operator

    try:
        configuration = await load_configuration(kubeconfig)
    except (ConfigException, OSError, ValueError, TypeError, yaml.YAMLError) as err:
        where = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        raise NoClusterConfig(f"cannot use kubeconfig {where}: {err}") from None
    stop = asyncio.Event()
    take_signals(stop)

    async def work(stop_work: asyncio.Event, leading: asyncio.Event) -> None:
        """From the start, elected or not: a standby keeps its caches warm (operator.main)."""
        operator = Operator(configuration, settings, metrics, health, leading=leading)
        # Created before Kopf starts: Kopf cancels the tasks created on its loop after that.
        synced = asyncio.create_task(report_synced(
            operator.loop.ready, leading, health, settings.timeouts.cache_sync_seconds))
        kopf_ready = asyncio.Event()
        signals = asyncio.create_task(take_signals_back(kopf_ready, stop))
        try:
            await operator.run(stop=stop_work, ready=kopf_ready)
        finally:
            for task in (synced, signals):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    election = settings.leader_election
    elector = None
    if election.enabled:
        identity = election.identity or default_identity()
        elector = ThreadedElector(lambda: KubeApi(k8s.ApiClient(configuration)), election,
                                  identity, observe_attempt=metrics.observe_lease_attempt)
        log().info("leader election", lease=f"{election.lease_namespace}/{election.lease_name}",
                   identity=identity)
    code = await run_replica(elector, work, stop, health, metrics)
    log().info("operator exiting", code=code)
    return code


def take_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)


async def take_signals_back(kopf_ready: asyncio.Event, stop: asyncio.Event) -> None:
    """Kopf installs its own SIGINT/SIGTERM handlers when it starts; once it is up, route
    the signals to the replica's `stop` again. Otherwise Kopf stops by itself, the replica
    hears nothing, and Kopf waits 5 s for its stop-flag watcher before the lease is
    released: a rolling update would hand over 5 s late."""
    await kopf_ready.wait()
    take_signals(stop)


async def report_synced(
    synced: asyncio.Event, leading: asyncio.Event, health: Any, limit: float
) -> None:
    """Readiness of a leader: not ready until its loop may run (caches synced); a standby
    keeps the "standing by" that `run_replica` set."""
    await leading.wait()
    if not synced.is_set():
        health.set_ready(False, "leader: syncing caches")
    try:
        async with asyncio.timeout(limit):  # not wait_for: no task Kopf would wait for
            await synced.wait()
    except TimeoutError:
        log().warning("caches not synced yet; still waiting", seconds=limit)
        await synced.wait()
    health.set_ready(True, "caches synced")


def log() -> Any:
    import structlog

    return structlog.get_logger("phalanx.operator")


def run(args: argparse.Namespace) -> int:
    try:
        settings = settings_from(args, os.environ)
    except SettingsError as err:
        print(f"phalanx operator: invalid settings: {err}", file=sys.stderr)
        return EXIT_INVALID
    from phalanx.observe.logging import configure_logging

    configure_logging(settings.log_level, settings.log_format)
    quiet_libraries(settings.log_level)
    try:
        return asyncio.run(serve(settings, args.kubeconfig))
    except (PortInUse, NoClusterConfig) as err:
        print(f"phalanx operator: {err}", file=sys.stderr)
        return EXIT_INVALID
