"""Pydantic models of the Phalanx CRDs (group scheduling.phalanx.io, version v1alpha1).

They mirror crds/*.yaml field for field (tests/foundation/test_api_models.py checks it),
including the CEL rules, so a manifest that validates here is accepted by the API server.
"""

from phalanx.api.meta import API_VERSION, Condition, ObjectMeta
from phalanx.api.networktopology import (
    NetworkTopology,
    NetworkTopologySpec,
    NetworkTopologyStatus,
    TopologyDomain,
    TopologyLevel,
)
from phalanx.api.podgroup import (
    Placement,
    PlacementDomain,
    PodGroup,
    PodGroupSpec,
    PodGroupStatus,
    PodGroupTopology,
    Role,
    SubGroup,
)
from phalanx.api.quantity import Quantity, parse_quantity
from phalanx.api.queue import Queue, QueueSpec, QueueStatus
from phalanx.core.names import API_GROUP

__all__ = [
    "API_GROUP",
    "API_VERSION",
    "Condition",
    "NetworkTopology",
    "NetworkTopologySpec",
    "NetworkTopologyStatus",
    "ObjectMeta",
    "Placement",
    "PlacementDomain",
    "PodGroup",
    "PodGroupSpec",
    "PodGroupStatus",
    "PodGroupTopology",
    "Quantity",
    "Queue",
    "QueueSpec",
    "QueueStatus",
    "Role",
    "SubGroup",
    "TopologyDomain",
    "TopologyLevel",
    "parse_quantity",
]
