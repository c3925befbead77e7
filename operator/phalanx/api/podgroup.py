"""PodGroup (namespaced, short name `pg`): a gang of pods placed all together or not at all."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, model_validator

from phalanx.api.meta import API_VERSION, Condition, Resource, SpecModel, StatusModel
from phalanx.api.names import LEVEL_NAME_PATTERN, ROLE_NAME_PATTERN
from phalanx.api.quantity import Quantity

LevelName = Annotated[str, Field(min_length=1, max_length=63, pattern=LEVEL_NAME_PATTERN)]
Phase = Literal["Pending", "Inqueue", "Running", "Unknown", "Completed", "Failed"]


class Role(SpecModel):
    name: str = Field(min_length=1, max_length=63, pattern=ROLE_NAME_PATTERN)
    min_member: int = Field(ge=1)


class SubGroup(SpecModel):
    """Every `size` pods of the gang inside one domain of level `required`."""

    size: int = Field(ge=1)
    required: LevelName


class PodGroupTopology(SpecModel):
    network_topology: str = Field(default="default", min_length=1, max_length=253)
    required: LevelName | None = None
    preferred: LevelName | None = None
    required_node_label: str | None = Field(default=None, min_length=1, max_length=317)
    preferred_node_label: str | None = Field(default=None, min_length=1, max_length=317)
    sub_group: SubGroup | None = None

    @model_validator(mode="after")
    def _one_constraint(self) -> PodGroupTopology:
        if self.required is not None and self.preferred is not None:
            raise ValueError("set topology.required or topology.preferred, not both")
        named = (self.required, self.preferred, self.required_node_label)
        if sum(level is not None for level in (*named, self.preferred_node_label)) > 1:
            raise ValueError(
                "set at most one of topology.required, preferred, requiredNodeLabel, "
                "preferredNodeLabel"
            )
        return self


class PodGroupSpec(SpecModel):
    min_member: int = Field(ge=1)
    queue: str = Field(default="default", min_length=1, max_length=253)
    priority_class_name: str | None = Field(default=None, max_length=253)
    min_resources: dict[str, Quantity] | None = Field(default=None, max_length=32)
    schedule_timeout_seconds: int | None = Field(default=None, ge=0)
    roles: list[Role] | None = Field(default=None, max_length=16)
    topology: PodGroupTopology | None = None

    @model_validator(mode="after")
    def _roles_fit(self) -> PodGroupSpec:
        roles = self.roles or []
        names = [role.name for role in roles]
        if len(set(names)) != len(names):
            raise ValueError("roles: names must be unique")
        if sum(role.min_member for role in roles) > self.min_member:
            raise ValueError("role minima (roles[].minMember) add up to more than spec.minMember")
        return self


class PlacementDomain(StatusModel):
    level: str
    name: str


class Placement(StatusModel):
    network_topology: str | None = None
    level: str | None = None
    climbed_levels: int | None = Field(default=None, ge=0)
    domains: list[PlacementDomain] | None = None
    nodes: list[str] | None = None
    summary: str | None = Field(default=None, max_length=256)


class PlacementPlan(StatusModel):
    id: str = Field(max_length=64)
    pods: dict[str, str]


class Nominated(StatusModel):
    """Room held for the group (see `phalanx.core.nomination`)."""

    nodes: list[Annotated[str, Field(max_length=253)]] = Field(max_length=10000)
    reason: Literal["Preempting", "Reserved"]
    since: datetime
    expires: datetime


class PodGroupStatus(StatusModel):
    phase: Phase | None = None
    pending: int | None = Field(default=None, ge=0)
    running: int | None = Field(default=None, ge=0)
    succeeded: int | None = Field(default=None, ge=0)
    failed: int | None = Field(default=None, ge=0)
    conditions: list[Condition] | None = Field(default=None, max_length=16)
    placement: Placement | None = None
    plan: PlacementPlan | None = None
    nominated: Nominated | None = None
    scheduled_time: datetime | None = None
    admitted_time: datetime | None = None
    observed_generation: int | None = Field(default=None, ge=0)


class PodGroup(Resource):
    api_version: Literal["scheduling.phalanx.io/v1alpha1"] = API_VERSION
    kind: Literal["PodGroup"] = "PodGroup"
    spec: PodGroupSpec
    status: PodGroupStatus | None = None
