"""NetworkTopology (cluster-scoped): levels of the network, coarse to fine, from node labels."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from phalanx.api.meta import API_VERSION, Condition, Resource, SpecModel, StatusModel
from phalanx.api.names import LABEL_KEY_PATTERN, LEVEL_NAME_PATTERN
from phalanx.core.names import HOSTNAME_LABEL

LabelKey = Annotated[str, Field(min_length=1, max_length=317, pattern=LABEL_KEY_PATTERN)]


class TopologyLevel(SpecModel):
    name: str = Field(min_length=1, max_length=63, pattern=LEVEL_NAME_PATTERN)
    node_labels: list[LabelKey] = Field(min_length=1, max_length=8)


class NetworkTopologySpec(SpecModel):
    levels: list[TopologyLevel] = Field(min_length=1, max_length=16)

    @model_validator(mode="after")
    def _levels_valid(self) -> NetworkTopologySpec:
        names = [level.name for level in self.levels]
        if len(set(names)) != len(names):
            raise ValueError("levels: names must be unique")
        with_hostname = [i for i, lv in enumerate(self.levels) if HOSTNAME_LABEL in lv.node_labels]
        if with_hostname and with_hostname != [len(self.levels) - 1]:
            raise ValueError(f"{HOSTNAME_LABEL} may only be a label of the last level")
        return self


class TopologyDomain(StatusModel):
    level: str
    name: str
    parent: str | None = None
    nodes: int | None = Field(default=None, ge=0)
    gpus: int | None = Field(default=None, ge=0)
    free_gpus: int | None = Field(default=None, ge=0)


class NetworkTopologyStatus(StatusModel):
    conditions: list[Condition] | None = Field(default=None, max_length=16)
    levels: int | None = Field(default=None, ge=0)
    domains: int | None = Field(default=None, ge=0)
    nodes: int | None = Field(default=None, ge=0)
    tree: list[TopologyDomain] | None = None


class NetworkTopology(Resource):
    api_version: Literal["scheduling.phalanx.io/v1alpha1"] = API_VERSION
    kind: Literal["NetworkTopology"] = "NetworkTopology"
    spec: NetworkTopologySpec
    status: NetworkTopologyStatus | None = None
