"""`phalanx operator` reads phalanx.config settings: flags > environment > file > defaults,
and a bad setting or a busy metrics port stops it with exit status 2 naming the setting."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from phalanx.cli.operator import add_arguments, settings_from
from phalanx.config import Settings, SettingsError
from phalanx.config.settings import Mode


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def operator_cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PHALANX_")}
    return subprocess.run(
        [sys.executable, "-m", "phalanx", "operator", *argv],
        env={**clean, **(env or {})}, capture_output=True, text=True, timeout=60, check=False,
    )


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text("mode: gate\ncycle_period_seconds: 7\nmetrics_port: 9100\n"
                    "leader_election: {lease_duration_seconds: 20, renew_deadline_seconds: 12}\n")
    return path


def test_without_file_or_flags_the_defaults_hold_and_no_lease_is_needed() -> None:
    settings = settings_from(parse(), {})
    assert settings.model_dump(exclude={"leader_election"}) == Settings().model_dump(
        exclude={"leader_election"})
    assert settings.metrics_port == 8080
    assert settings.leader_election.enabled is False


def test_a_settings_file_turns_leader_election_on_by_default(config_file: Path) -> None:
    settings = settings_from(parse("--config", str(config_file)), {})
    assert settings.leader_election.enabled is True
    assert settings.leader_election.lease_duration_seconds == 20
    assert (settings.mode, settings.cycle_period_seconds) == (Mode.GATE, 7)


def test_flags_beat_environment_which_beats_the_file(config_file: Path) -> None:
    env = {"PHALANX_CONFIG": str(config_file), "PHALANX_MODE": "binder",
           "PHALANX_METRICS_PORT": "9200", "PHALANX_LEADER_ELECTION__ENABLED": "false"}
    from_env = settings_from(parse(), env)
    assert (from_env.mode, from_env.metrics_port, from_env.cycle_period_seconds) == (
        "binder", 9200, 7)
    assert from_env.leader_election.enabled is False
    from_flags = settings_from(
        parse("--mode", "both", "--metrics-port", "0", "--leader-elect",
              "--namespace-scope", "a", "--namespace-scope", "b"), env)
    assert (from_flags.mode, from_flags.metrics_port) == ("both", 0)
    assert from_flags.namespaces == ("a", "b")
    assert from_flags.leader_election.enabled is True
    assert from_flags.leader_election.lease_duration_seconds == 20  # the rest of the section


def test_environment_alone_can_turn_leader_election_on() -> None:
    env = {"PHALANX_LEADER_ELECTION__ENABLED": "true", "PHALANX_LEADER_ELECTION__IDENTITY": "x"}
    assert settings_from(parse(), env).leader_election.enabled is True


def test_a_bad_flag_is_named_with_its_setting() -> None:
    with pytest.raises(SettingsError, match=r"metrics_port: .*65535.*--metrics-port"):
        settings_from(parse("--metrics-port", "70000"), {})


def test_a_setting_the_operator_does_not_have_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("scheduler_name: other\n")  # the name is fixed: phalanx
    with pytest.raises(SettingsError, match="scheduler_name: unknown setting"):
        settings_from(parse("--config", str(path)), {})


def test_an_invalid_environment_setting_exits_2_naming_it() -> None:
    done = operator_cli(env={"PHALANX_CYCLE_PERIOD_SECONDS": "-1"})
    assert done.returncode == 2
    assert "cycle_period_seconds" in done.stderr
    assert "PHALANX_CYCLE_PERIOD_SECONDS" in done.stderr


def test_an_invalid_file_setting_exits_2_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("scoring: {node_order: random}\n")
    done = operator_cli("--config", str(path))
    assert done.returncode == 2
    assert "scoring.node_order" in done.stderr and str(path) in done.stderr


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_a_busy_metrics_port_exits_2_naming_the_setting(busy_port: int, tmp_path: Path) -> None:
    done = operator_cli("--metrics-host", "127.0.0.1", "--metrics-port", str(busy_port),
                        "--kubeconfig", str(tmp_path / "never-read"))
    assert done.returncode == 2
    assert "metrics_port" in done.stderr and str(busy_port) in done.stderr
    assert "--metrics-port" in done.stderr


def test_help_documents_the_precedence() -> None:
    done = operator_cli("--help")
    assert done.returncode == 0
    precedence = done.stdout[done.stdout.index("highest precedence first"):]
    order = [precedence.index(word) for word in ("flags", "PHALANX_", "file", "defaults")]
    assert order == sorted(order)


@pytest.mark.parametrize("content", [None, "", "apiVersion: v1\nkind: Config\n", "{not yaml"])
def test_an_unusable_kubeconfig_exits_2_naming_it_without_a_traceback(
    tmp_path: Path, content: str | None
) -> None:
    path = tmp_path / "kubeconfig"
    if content is not None:
        path.write_text(content)
    done = operator_cli("--metrics-host", "127.0.0.1", "--metrics-port", "0",
                        "--kubeconfig", str(path))
    assert done.returncode == 2
    assert "kubeconfig" in done.stderr and str(path) in done.stderr
    assert "Traceback" not in done.stderr
