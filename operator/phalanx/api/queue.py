"""Queue (cluster-scoped): fair-share weight, guarantee and capability, hierarchy."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from phalanx.api.meta import API_VERSION, Resource, SpecModel, StatusModel
from phalanx.api.names import LEVEL_NAME_PATTERN
from phalanx.api.quantity import Quantity, parse_quantity

NamespaceName = Annotated[str, Field(max_length=63, pattern=LEVEL_NAME_PATTERN)]


class QueueSpec(SpecModel):
    weight: int = Field(default=1, ge=1, le=65535)
    guarantee: dict[str, Quantity] | None = Field(default=None, max_length=32)
    capability: dict[str, Quantity] | None = Field(default=None, max_length=32)
    parent: str | None = Field(default=None, max_length=253)
    reclaimable: bool = True
    state: Literal["Open", "Closed"] = "Open"
    namespaces: list[NamespaceName] | None = Field(default=None, max_length=1024)

    @model_validator(mode="after")
    def _guarantee_within_capability(self) -> QueueSpec:
        guarantee, capability = self.guarantee or {}, self.capability or {}
        over = [
            name
            for name, amount in guarantee.items()
            if name in capability and parse_quantity(amount) > parse_quantity(capability[name])
        ]
        if over:
            raise ValueError(f"spec.guarantee exceeds spec.capability for {', '.join(over)}")
        return self


class QueueStatus(StatusModel):
    pending: int | None = Field(default=None, ge=0)
    inqueue: int | None = Field(default=None, ge=0)
    running: int | None = Field(default=None, ge=0)
    allocated: dict[str, Quantity] | None = None
    deserved: dict[str, Quantity] | None = None


class Queue(Resource):
    api_version: Literal["scheduling.phalanx.io/v1alpha1"] = API_VERSION
    kind: Literal["Queue"] = "Queue"
    spec: QueueSpec = Field(default_factory=QueueSpec)
    status: QueueStatus | None = None
