"""Shared pieces of the Phalanx CRD models: configuration, metadata, conditions."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from phalanx.core.names import GROUP_VERSION

API_VERSION: Final = GROUP_VERSION


class SpecModel(BaseModel):
    """Spec parts: camelCase on the wire, unknown fields rejected (as the API server does)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class StatusModel(BaseModel):
    """Status parts: written by the operator; unknown fields from newer versions ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True
    )


class ObjectMeta(BaseModel):
    """The metadata fields Phalanx reads; the rest is kept as is."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="allow", frozen=True
    )

    name: str
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    uid: str | None = None
    generation: int | None = None
    resource_version: str | None = None
    creation_timestamp: datetime | None = None


class Condition(StatusModel):
    type: str = Field(max_length=316)
    status: Literal["True", "False", "Unknown"]
    reason: str | None = Field(default=None, max_length=1024)
    message: str | None = Field(default=None, max_length=32768)
    last_transition_time: datetime | None = None
    observed_generation: int | None = Field(default=None, ge=0)


class Resource(BaseModel):
    """Base of the top-level objects; `manifest()` gives the dict to send to the API server."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True
    )

    metadata: ObjectMeta

    def manifest(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")
