"""Scheduler settings: defaults, file, environment, and the errors that stop startup."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import yaml

from phalanx.config import Settings, SettingsError, load_settings

REPO = Path(__file__).resolve().parents[2]
SHIPPED_CONFIG = REPO / "manifests" / "operator" / "config.yaml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_defaults_without_file_or_environment() -> None:
    settings = load_settings(env={})
    assert settings == Settings()
    assert settings.mode == "both"
    assert settings.leader_election.enabled is True


def test_file_overrides_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, "mode: gate\ncycle_period_seconds: 2.5\nscoring: {node_order: spread}\n")
    settings = load_settings(path, env={})
    assert settings.mode == "gate"
    assert settings.cycle_period_seconds == 2.5
    assert settings.scoring.node_order == "spread"
    assert settings.scoring.topology_aware is True  # untouched nested default


def test_environment_overrides_file_field_by_field(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "mode: gate\nleader_election: {enabled: true, lease_name: from-file}\n",
    )
    env = {"PHALANX_MODE": "binder", "PHALANX_LEADER_ELECTION__ENABLED": "false"}
    settings = load_settings(path, env=env)
    assert settings.mode == "binder"
    assert settings.leader_election.enabled is False
    assert settings.leader_election.lease_name == "from-file"  # sibling kept from the file


def test_config_path_comes_from_phalanx_config(tmp_path: Path) -> None:
    path = write(tmp_path, "metrics_port: 9100\n")
    assert load_settings(env={"PHALANX_CONFIG": str(path)}).metrics_port == 9100


def test_explicit_path_beats_phalanx_config(tmp_path: Path) -> None:
    chosen = write(tmp_path, "metrics_port: 9100\n")
    other = tmp_path / "other.yaml"
    other.write_text("metrics_port: 9200\n")
    assert load_settings(chosen, env={"PHALANX_CONFIG": str(other)}).metrics_port == 9100


def test_environment_names_are_case_insensitive_and_lists_take_json() -> None:
    settings = load_settings(env={"phalanx_namespaces": '["team-a", "team-b"]'})
    assert settings.namespaces == ("team-a", "team-b")


def test_unrelated_environment_is_ignored() -> None:
    assert load_settings(env={"PHALANX_TOOLS_CACHE": "/x", "HOME": "/root"}) == Settings()


def test_process_environment_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHALANX_BINDING_CONCURRENCY", "7")
    monkeypatch.delenv("PHALANX_CONFIG", raising=False)
    assert load_settings().binding_concurrency == 7


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"PHALANX_CYCLE_PERIOD_SECONDS": "0"},
            "cycle_period_seconds: must be > 0 (got '0' from env PHALANX_CYCLE_PERIOD_SECONDS)",
        ),
        ({"PHALANX_MODE": "fast"}, "mode: must be one of 'binder', 'gate' or 'both'"),
        ({"PHALANX_BINDING_CONCURRENCY": "0"}, "binding_concurrency: must be >= 1"),
        ({"PHALANX_METRICS_PORT": "70000"}, "metrics_port: must be <= 65535"),
        (
            {"PHALANX_LEADER_ELECTION__ENABLED": "perhaps"},
            "leader_election.enabled: input should be a valid boolean",
        ),
        (
            {"PHALANX_LEADER_ELECTION__LEASE_NAME": "Not_A_Name"},
            "leader_election.lease_name: must be a lowercase DNS name",
        ),
        (
            {"PHALANX_DEBOUNCE_SECONDS": "3"},
            "debounce_seconds: must not exceed max_delay_seconds (3 > 1)",
        ),
        (
            {"PHALANX_LEADER_ELECTION__RENEW_DEADLINE_SECONDS": "20"},
            "leader_election.renew_deadline_seconds: must be less than lease_duration_seconds",
        ),
    ],
)
def test_invalid_environment_value_is_named(env: dict[str, str], expected: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(env=env)
    assert expected in str(caught.value)


def test_invalid_file_value_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "timeouts:\n  api_request_seconds: -1\n")
    with pytest.raises(SettingsError) as caught:
        load_settings(path, env={})
    message = str(caught.value)
    assert message.startswith("timeouts.api_request_seconds: must be > 0")
    assert str(path) in message


def test_unknown_key_in_file_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "cycle_period: 3\n")
    with pytest.raises(SettingsError, match="cycle_period: unknown setting"):
        load_settings(path, env={})


def test_every_bad_setting_is_reported_at_once(tmp_path: Path) -> None:
    path = write(tmp_path, "mode: fast\nmetrics_port: -1\n")
    with pytest.raises(SettingsError) as caught:
        load_settings(path, env={})
    assert "mode:" in str(caught.value)
    assert "metrics_port:" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("- a\n- b\n", "must hold a mapping"), ("mode: [unclosed\n", "not valid YAML")],
)
def test_malformed_file_is_an_error(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(SettingsError, match=expected):
        load_settings(write(tmp_path, text), env={})


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="PHALANX_CONFIG: cannot read"):
        load_settings(env={"PHALANX_CONFIG": str(tmp_path / "absent.yaml")})


def test_empty_file_means_defaults(tmp_path: Path) -> None:
    assert load_settings(write(tmp_path, ""), env={}) == Settings()


def test_settings_are_immutable() -> None:
    settings = load_settings(env={})
    with pytest.raises(ValueError):
        settings.mode = "gate"


def test_shipped_configmap_is_valid_and_spells_out_every_default() -> None:
    # The ConfigMap documents every setting; it must load, and match the model's defaults
    # so that a user reading it sees what the operator runs with.
    assert load_settings(SHIPPED_CONFIG, env={}) == Settings()
    written = yaml.safe_load(SHIPPED_CONFIG.read_text())
    assert set(written) == set(Settings.model_fields)


def test_every_setting_is_read_by_the_code() -> None:
    """A setting nothing reads would let an owner tune a knob that does nothing: each field
    (nested ones too) is read as an attribute outside the settings module (or by
    `scheduler_config`, which hands the core its knobs)."""
    package = Path(__file__).resolve().parents[2] / "operator" / "phalanx"
    sources = "\n".join(path.read_text() for path in package.rglob("*.py")
                        if path.name != "settings.py" or path.parent.name != "config")
    sources += inspect.getsource(Settings.scheduler_config)
    sections = {name: field.annotation for name, field in Settings.model_fields.items()}
    names = list(sections)
    for annotation in sections.values():
        if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
            names += list(annotation.model_fields)
    unread = [name for name in names if f".{name}" not in sources]
    assert unread == []


def test_scheduler_config_follows_the_scoring_settings() -> None:
    settings = load_settings(
        env={"PHALANX_SCORING__NODE_ORDER": "spread", "PHALANX_DEFAULT_TOPOLOGY": "fabric"}
    )
    core = settings.scheduler_config()
    assert (core.node_order, core.topology_aware, core.default_topology) == (
        "spread",
        True,
        "fabric",
    )


def test_avoiding_not_ready_domains_is_off_unless_a_level_is_named() -> None:
    assert load_settings(env={}).scheduler_config().avoid_not_ready_level is None
    named = load_settings(env={"PHALANX_AVOID_NOT_READY_LEVEL": "rack"})
    assert named.scheduler_config().avoid_not_ready_level == "rack"
    with pytest.raises(SettingsError, match="avoid_not_ready_level"):
        load_settings(env={"PHALANX_AVOID_NOT_READY_LEVEL": ""})
