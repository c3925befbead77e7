"""Scheduler settings: one model, read from a YAML file and `PHALANX_*` environment variables."""

from phalanx.config.settings import (
    EvictionMode,
    LeaderElection,
    Preemption,
    Scoring,
    Settings,
    SettingsError,
    Timeouts,
    load_settings,
)

__all__ = [
    "EvictionMode",
    "LeaderElection",
    "Preemption",
    "Scoring",
    "Settings",
    "SettingsError",
    "Timeouts",
    "load_settings",
]
