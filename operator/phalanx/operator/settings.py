"""What the operator can be tuned with, and Kopf settings that keep watched objects untouched."""

from __future__ import annotations

import dataclasses
import enum
import logging
from typing import Any

import kopf

from phalanx.config import Settings

API_GROUP = "scheduling.phalanx.io"
API_VERSION = "v1alpha1"
SCHEDULER_NAME = "phalanx"
GATE = "scheduling.phalanx.io/gang"
DEFAULT_QUEUE = "default"
COMPONENT = "phalanx"


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
    backoff_initial_seconds: float = _DEFAULTS["backoff_initial_seconds"]
    backoff_max_seconds: float = _DEFAULTS["backoff_max_seconds"]
    create_default_queue: bool = _DEFAULTS["create_default_queue"]

    @classmethod
    def from_settings(cls, settings: Settings) -> OperatorConfig:
        values = settings.operator_config_values()
        return cls(**{**values, "mode": Mode(values["mode"])})


def kopf_settings(config: OperatorConfig) -> kopf.OperatorSettings:
    """Kopf settings that write nothing onto what Kopf watches.

    Kopf watches only Queues, NetworkTopologies and PriorityClasses (Pods, PodGroups and
    Nodes come from `raw_watch.py`), with index and event handlers that never patch. Kopf's
    bookkeeping (progress, diff base) would only concern change handlers, which Phalanx
    does not register; it is still kept in Phalanx-prefixed annotations so it is
    recognisable. Kopf's own k8s Events are off (Phalanx posts its own, on PodGroups).
    Peering is off: replicas elect one leader through a Lease (`phalanx.leader`); even a
    second active one cannot double-bind, because the API server refuses a binding to an
    already bound pod.
    """
    settings = kopf.OperatorSettings()
    settings.posting.enabled = False
    settings.posting.level = logging.WARNING
    settings.peering.standalone = True
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=API_GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=API_GROUP, key="last-handled-configuration"
    )
    settings.persistence.finalizer = f"{API_GROUP}/operator"
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 10
    settings.networking.request_timeout = 30
    # Never SIGKILL the process on a cancelled shutdown (in-process operators in tests/demo).
    settings.process.ultimate_exiting_timeout = None
    return settings
