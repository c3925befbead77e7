"""Scheduler settings: the one place every tunable of the operator is declared and checked.

Values come, lowest precedence first, from the defaults below, a YAML file (the ConfigMap
mounted in the pod; its path in `PHALANX_CONFIG`), and `PHALANX_*` environment variables
(nested fields with `__`, e.g. `PHALANX_LEADER_ELECTION__ENABLED=false`). A bad value stops
startup with a `SettingsError` that names the setting and where the value came from, because
an operator that silently falls back to a default schedules differently from what its
owner wrote.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from phalanx.core.model.config import SchedulerConfig
from phalanx.core.model.names import DNS_LABEL, DNS_LABEL_MAX

ENV_PREFIX = "PHALANX_"
ENV_NESTED_DELIMITER = "__"
CONFIG_PATH_ENV = "PHALANX_CONFIG"

_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"

class Mode(enum.StrEnum):
    """Which pods the operator places: bound by it (pods naming schedulerName phalanx),
    pinned and un-gated for kube-scheduler (pods gated by scheduling.phalanx.io/gang), or
    both."""

    BINDER = "binder"
    GATE = "gate"
    BOTH = "both"

    @property
    def binds(self) -> bool:
        return self in (Mode.BINDER, Mode.BOTH)

    @property
    def ungates(self) -> bool:
        return self in (Mode.GATE, Mode.BOTH)


class EvictionMode(enum.StrEnum):
    """How a victim pod goes: EVICT through the Eviction API (PodDisruptionBudgets are
    honoured), or DELETE it (they are not)."""

    EVICT = "evict"
    DELETE = "delete"


NodeOrder = Literal["binpack", "spread"]


class SettingsError(ValueError):
    """A setting is invalid; the message names it, its value and its source."""


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Scoring(_Section):
    """How the core ranks nodes and domains (maps onto `phalanx.core` SchedulerConfig)."""

    node_order: NodeOrder = "binpack"
    topology_aware: bool = True


class Timeouts(_Section):
    """Upper bounds on waits, so a stuck API call never stalls the scheduling loop forever."""

    api_request_seconds: float = Field(default=30.0, gt=0)
    cache_sync_seconds: float = Field(default=120.0, gt=0)


class Preemption(_Section):
    """Evicting for priority and queue guarantees, holding room, starvation protection.

    `enabled`: a gang that cannot be placed may evict lower-priority gangs of its queue,
    and a queue below its guarantee may reclaim from queues above theirs. The room freed
    is held for the preemptor `nomination_timeout_seconds`; a gang that waited
    `starvation_seconds` while others were placed gets room reserved. `eviction`: `evict`
    goes through the Eviction API (PodDisruptionBudgets honoured), `delete` deletes the
    pods. A pod whose eviction was refused is left to the core as refused for
    `eviction_retry_seconds` (other victims are chosen meanwhile), then tried again.
    `loss_factor`: a gang whose start is known from runtime limits evicts only if the
    GPU-hours it would wait until then are at least this many times the GPU-hours of work
    its victims lose; else it waits, with room reserved at that start (0: always evict;
    reclaim below a guarantee is never held back).
    """

    enabled: bool = True
    nomination_timeout_seconds: float = Field(default=300.0, gt=0)
    starvation_seconds: float = Field(default=300.0, gt=0)
    loss_factor: float = Field(default=3.0, ge=0)
    eviction: EvictionMode = EvictionMode.EVICT
    eviction_retry_seconds: float = Field(default=60.0, gt=0)


class FairSharing(_Section):
    """Fair sharing over time: queues are ordered by what they run now plus what they ran
    before, decayed with `usage_half_life_seconds` (a Queue's
    spec.fairSharing.usageHalfLifeSeconds overrides it); 0 keeps no history (DRF on what
    runs now), the default, so nothing changes unless asked. Each queue's decayed usage
    is written to its status at most every `usage_write_seconds`."""

    usage_half_life_seconds: float = Field(default=0.0, ge=0)
    usage_write_seconds: float = Field(default=30.0, gt=0)


class Dra(_Section):
    """Dynamic Resource Allocation. `class_resources`: DeviceClasses whose devices also
    count as a resource, as Kueue's deviceClassMappings: with the default, a device of the
    NVIDIA driver's class `gpu.nvidia.com` is one `nvidia.com/gpu` for queue quotas,
    fragmentation-aware packing and the GPUs preemption weighs. A class not named here
    counts only as its own kind of device."""

    class_resources: dict[str, str] = Field(
        default_factory=lambda: {"gpu.nvidia.com": "nvidia.com/gpu"}
    )


class LeaderElection(_Section):
    """One active scheduler among the replicas, through a coordination.k8s.io Lease.

    The three durations mean what kube-scheduler's `leaderElection` fields mean. The
    defaults are a third of kube-scheduler's (15/10/2 s), so that a standby takes over a
    SIGKILLed leader in about lease + retry seconds (kill -> its first binding, measured by
    `python -m bench.chaos`: bench/README.md). The renew deadline still leaves a leader
    three attempts, each far longer than the slowest lease read + write measured there.
    """

    enabled: bool = True
    lease_name: str = Field(default="phalanx-leader", pattern=_DNS_SUBDOMAIN, max_length=253)
    lease_namespace: str = Field(
        default="phalanx-system", pattern=DNS_LABEL, max_length=DNS_LABEL_MAX
    )
    lease_duration_seconds: float = Field(default=5.0, gt=0)
    renew_deadline_seconds: float = Field(default=3.0, gt=0)
    retry_period_seconds: float = Field(default=1.0, gt=0)
    identity: str = ""  # empty: the pod name (HOSTNAME)

    @model_validator(mode="after")
    def _ordered_durations(self) -> LeaderElection:
        # A leader must give up before its lease can expire, or two leaders overlap.
        if not self.renew_deadline_seconds < self.lease_duration_seconds:
            raise ValueError(
                "renew_deadline_seconds: must be less than lease_duration_seconds "
                f"({self.renew_deadline_seconds:g} >= {self.lease_duration_seconds:g})"
            )
        if not self.retry_period_seconds < self.renew_deadline_seconds:
            raise ValueError(
                "retry_period_seconds: must be less than renew_deadline_seconds "
                f"({self.retry_period_seconds:g} >= {self.renew_deadline_seconds:g})"
            )
        return self


class Webhook(_Section):
    """The admission webhooks the operator serves (`phalanx.webhooks`): a pod of a gang
    gets `schedulerName: phalanx` or the gate; a PodGroup or Queue the schema cannot
    judge is refused. Off by default: a bare `phalanx operator` serves nothing.

    `cert_dir`: a folder holding tls.crt, tls.key and ca.crt (the Secret
    phalanx-webhook-tls, from cert-manager or made by hand); empty: a self-signed
    certificate made at startup for `url_host` and `host` (development, the local
    cluster). `register_configurations`: the operator writes the two webhook
    configurations itself, pointed at https://`url_host`:`port` with that certificate's CA
    (the local cluster, where kube-apiserver runs on this host); in a real cluster the
    manifests carry them.
    `allow_unknown_queues`: a PodGroup naming a Queue that does not exist yet is accepted
    with a warning (GitOps tools may apply it before its Queue) instead of refused.
    `lookup_timeout_seconds`: the longest a pod's admission waits for the API server to
    read its owners and namespace (kube-apiserver gives a webhook 10 s in all).
    """

    enabled: bool = False
    host: str = "0.0.0.0"
    port: int = Field(default=9443, ge=0, le=65535)  # 0: any free port (tests)
    cert_dir: str = ""
    register_configurations: bool = False
    url_host: str = "127.0.0.1"
    allow_unknown_queues: bool = False
    lookup_timeout_seconds: float = Field(default=3.0, gt=0, le=10)


class Settings(BaseSettings):
    """Everything an operator replica needs to know before it starts."""

    model_config = SettingsConfigDict(
        frozen=True,
        extra="forbid",
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=ENV_NESTED_DELIMITER,
        case_sensitive=False,
    )

    mode: Mode = Mode.BOTH
    namespaces: tuple[str, ...] = ()  # empty: every namespace
    debounce_seconds: float = Field(default=0.2, ge=0)  # quiet time after a change
    max_delay_seconds: float = Field(default=1.0, gt=0)  # a busy stream still gets cycles
    cycle_period_seconds: float = Field(default=5.0, gt=0)  # a cycle at least this often
    binding_concurrency: int = Field(default=384, ge=1, le=1024)  # bindings in flight, at most
    # The reply time the bound on bindings in flight aims for (operator/in_flight_limit.py):
    # fewer in flight while replies are slower and fewer make them quicker, more (up to
    # binding_concurrency) while quicker. None: always binding_concurrency.
    binding_reply_target_seconds: float | None = Field(default=1.0, gt=0)
    # whether replies may come gzip'd (a LIST over 128 KiB): off, as kube-scheduler and
    # kube-controller-manager run (kubernetes/kubernetes#80919); on for a slow network
    api_compression: bool = False
    assume_seconds: float = Field(default=60.0, gt=0)  # an unconfirmed bound pod expires
    partial_grace_seconds: float = Field(default=60.0, ge=0)  # partly bound gang deadline
    discovery_period_seconds: float = Field(default=30.0, gt=0)  # CRDs installed later
    # Waiting gangs' expected starts (status.expectedStart) are worked out at most this
    # often: each estimate places every waiting gang again (core/timeline/estimate.py).
    # 0: every cycle.
    estimate_interval_seconds: float = Field(default=30.0, ge=0)
    backoff_initial_seconds: float = Field(default=5.0, gt=0)  # retry after a timeout
    backoff_max_seconds: float = Field(default=300.0, gt=0)
    default_topology: str = Field(default="default", min_length=1)
    # A level name: while a node is NotReady, gangs not yet placed keep out of its domain
    # of that level (core/placement/near_not_ready.py). None: off.
    avoid_not_ready_level: str | None = Field(default=None, min_length=1)
    create_default_queue: bool = True
    scoring: Scoring = Scoring()
    timeouts: Timeouts = Timeouts()
    preemption: Preemption = Preemption()
    fair_sharing: FairSharing = FairSharing()
    dra: Dra = Dra()
    metrics_host: str = "0.0.0.0"
    metrics_port: int = Field(default=8080, ge=0, le=65535)  # 0: any free port (tests)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["json", "console"] = "json"
    leader_election: LeaderElection = LeaderElection()
    webhook: Webhook = Webhook()

    @model_validator(mode="after")
    def _ordered_delays(self) -> Settings:
        # debounce <= max delay <= period, else the loop's timers contradict each other.
        pairs = (
            ("debounce_seconds", "max_delay_seconds"),
            ("max_delay_seconds", "cycle_period_seconds"),
            ("backoff_initial_seconds", "backoff_max_seconds"),
        )
        for low, high in pairs:
            low_value, high_value = getattr(self, low), getattr(self, high)
            if low_value > high_value:
                raise ValueError(f"{low}: must not exceed {high} ({low_value:g} > {high_value:g})")
        return self

    def scheduler_config(self) -> SchedulerConfig:
        """The core's knobs, as the operator and `kubectl phalanx explain` pass them."""
        return SchedulerConfig(
            topology_aware=self.scoring.topology_aware,
            node_order=self.scoring.node_order,
            default_topology=self.default_topology,
            avoid_not_ready_level=self.avoid_not_ready_level,
            backoff_initial_seconds=self.backoff_initial_seconds,
            backoff_max_seconds=self.backoff_max_seconds,
            preemption=self.preemption.enabled,
            nomination_timeout_seconds=self.preemption.nomination_timeout_seconds,
            starvation_seconds=self.preemption.starvation_seconds,
            preemption_loss_factor=self.preemption.loss_factor,
            partial_grace_seconds=self.partial_grace_seconds,
            usage_half_life_seconds=self.fair_sharing.usage_half_life_seconds,
        )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Only explicit values: `load_settings` merges file and environment itself, so that
        # tests pass an environment instead of mutating the process's one.
        return (init_settings,)


class _MappingEnvSource(EnvSettingsSource):
    """pydantic-settings' environment parsing, applied to a given mapping."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = dict(env)
        super().__init__(Settings)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return {key.lower(): value for key, value in self._env.items()}


def load_settings(
    path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Settings from `path` (default: `$PHALANX_CONFIG`, if set) overridden by `env`.

    `env` defaults to the process environment. Raises `SettingsError` naming every bad setting.
    """
    environ = os.environ if env is None else env
    config_path = path if path is not None else environ.get(CONFIG_PATH_ENV) or None
    file_values = _read_yaml(Path(config_path)) if config_path else {}
    try:
        env_values = _MappingEnvSource(environ)()
    except Exception as err:  # pydantic-settings raises plain ValueError/SettingsError here
        raise SettingsError(
            f"environment: {err} (a section takes JSON, or set one field with "
            f"{ENV_PREFIX}<SECTION>{ENV_NESTED_DELIMITER}<FIELD>)"
        ) from None
    merged = _deep_merge(file_values, env_values)
    try:
        return Settings(**merged)
    except ValidationError as err:
        where = _Origins(config_path, file_values, env_values)
        raise SettingsError(_describe(err, where)) from None


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise SettingsError(f"{CONFIG_PATH_ENV}: cannot read {path}: {err.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise SettingsError(f"{path}: not valid YAML: {err}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: must hold a mapping of settings, not {type(data).__name__}")
    return data


def _deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


class _Origins:
    """Where a value at a given path came from, for error messages."""

    def __init__(self, path: object, file_values: Mapping[str, Any], env: Mapping[str, Any]):
        self._path = path
        self._file = file_values
        self._env = env

    def of(self, loc: tuple[str | int, ...]) -> str:
        keys = [str(part) for part in loc]
        if keys and _has_path(self._env, keys):
            return "env " + ENV_PREFIX + ENV_NESTED_DELIMITER.join(keys).upper()
        if keys and _has_path(self._file, keys):
            return f"file {self._path}"
        return ""


def _has_path(values: Mapping[str, Any], keys: list[str]) -> bool:
    node: Any = values
    for key in keys:
        if not isinstance(node, Mapping) or key not in node:
            return False
        node = node[key]
    return True


def _describe(err: ValidationError, where: _Origins) -> str:
    lines = []
    for error in err.errors(include_url=False):
        loc = tuple(error["loc"])
        name = ".".join(str(part) for part in loc)
        if error["type"] == "value_error":
            # Cross-field checks: the message starts with the field it blames.
            lines.append(f"{name}.{_plain(error)}" if name else _plain(error))
            continue
        origin = where.of(loc)
        detail = f"{_plain(error)} (got {error['input']!r}{' from ' + origin if origin else ''})"
        lines.append(f"{name}: {detail}")
    return "; ".join(lines)


def _plain(error: Mapping[str, Any]) -> str:
    """Pydantic's messages, reworded for someone editing a ConfigMap."""
    ctx = error.get("ctx") or {}
    kind = error["type"]
    bounds = {
        "greater_than": ">",
        "greater_than_equal": ">=",
        "less_than": "<",
        "less_than_equal": "<=",
    }
    if kind in bounds:
        (bound,) = ctx.values()
        return f"must be {bounds[kind]} {bound:g}"
    if kind in ("literal_error", "enum"):
        return f"must be one of {ctx['expected']}"
    if kind == "extra_forbidden":
        return "unknown setting"
    if kind == "string_pattern_mismatch":
        return "must be a lowercase DNS name"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    return str(error["msg"]).lower()
