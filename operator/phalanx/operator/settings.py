"""What the operator can be tuned with, and the Kopf settings that keep Pods and Nodes untouched."""

from __future__ import annotations

import dataclasses
import enum
import logging

import kopf

API_GROUP = "scheduling.phalanx.io"
API_VERSION = "v1alpha1"
SCHEDULER_NAME = "phalanx"
GATE = "scheduling.phalanx.io/gang"
PLAN_ANNOTATION = "scheduling.phalanx.io/plan"
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


@dataclasses.dataclass(frozen=True)
class OperatorConfig:
    """Knobs of the shell; the scheduling policy itself lives in the core's SchedulerConfig."""

    mode: Mode = Mode.BOTH
    namespaces: tuple[str, ...] = ()  # empty: cluster-wide
    debounce_seconds: float = 0.2  # quiet time after a change before a cycle runs
    max_delay_seconds: float = 1.0  # a steady event stream still gets a cycle this often
    period_seconds: float = 5.0  # a cycle runs at least this often (timeouts, backoff)
    bind_concurrency: int = 32  # requests in flight per gang
    assume_seconds: float = 60.0  # an assumed pod not confirmed by the watch expires
    partial_grace_seconds: float = 60.0  # default deadline for a partially bound gang
    backoff_initial_seconds: float = 5.0  # first retry delay after a timeout
    backoff_max_seconds: float = 300.0
    create_default_queue: bool = True


def kopf_settings(config: OperatorConfig) -> kopf.OperatorSettings:
    """Kopf settings that write nothing onto Pods or Nodes.

    Only index and event handlers watch Pods and Nodes, and those never patch. Kopf's
    bookkeeping (progress, diff base) would only concern change handlers, which Phalanx
    does not register; it is still kept in Phalanx-prefixed annotations so it is
    recognisable. Kopf's own k8s Events are off (Phalanx posts its own, on PodGroups).
    Peering is off: one operator instance; a second one is harmless because a binding
    to an already bound pod is refused by the API server.
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
