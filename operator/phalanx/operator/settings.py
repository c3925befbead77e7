"""The shell's runtime knobs (`OperatorConfig`) and which pods it places (`Mode`)."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from phalanx.config import Settings


class Mode(enum.StrEnum):
    """Which pods the writer places: bound by us, un-gated for kube-scheduler, or both."""

    BINDER = "binder"
    GATE = "gate"
    BOTH = "both"

    @property
    def binds(self) -> bool:
        return self in (Mode.BINDER, Mode.BOTH)

    @property
    def ungates(self) -> bool:
        return self in (Mode.GATE, Mode.BOTH)


# Defaults come from the one settings model, so a bare `OperatorConfig()` (tests, demo)
# behaves like an operator started without a settings file.
_DEFAULTS: dict[str, Any] = Settings().operator_config_values()
_DEFAULT_MODE = Mode(_DEFAULTS["mode"])


@dataclasses.dataclass(frozen=True)
class OperatorConfig:
    """The shell's runtime knobs, built from `phalanx.config.Settings` (which documents them);
    the scheduling policy itself lives in the core's SchedulerConfig."""

    mode: Mode = _DEFAULT_MODE
    namespaces: tuple[str, ...] = _DEFAULTS["namespaces"]  # empty: cluster-wide
    debounce_seconds: float = _DEFAULTS["debounce_seconds"]
    max_delay_seconds: float = _DEFAULTS["max_delay_seconds"]
    period_seconds: float = _DEFAULTS["period_seconds"]
    bind_concurrency: int = _DEFAULTS["bind_concurrency"]
    assume_seconds: float = _DEFAULTS["assume_seconds"]
    partial_grace_seconds: float = _DEFAULTS["partial_grace_seconds"]
    create_default_queue: bool = _DEFAULTS["create_default_queue"]

    @classmethod
    def from_settings(cls, settings: Settings) -> OperatorConfig:
        values = settings.operator_config_values()
        return cls(**{**values, "mode": Mode(values["mode"])})
