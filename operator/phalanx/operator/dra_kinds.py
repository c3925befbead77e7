"""The `resource.k8s.io/v1` kinds (Dynamic Resource Allocation) the operator watches.

They are optional kinds (`optional_kinds.py`): watched once the API server serves them,
so a cluster without DRA keeps working with empty stores. The cache parses them with the
core's parsers like every kind (`core/parse/objects.PARSERS`), and the core assembles
them into the snapshot's `DraInventory`.
"""

from __future__ import annotations

from phalanx.operator.cache import Kind
from phalanx.operator.optional_kinds import OptionalKind

DRA_GROUP_VERSION = "resource.k8s.io/v1"

DRA_KINDS: dict[OptionalKind, Kind] = {
    OptionalKind(DRA_GROUP_VERSION, "resourceslices", "ResourceSlice"): Kind.RESOURCE_SLICE,
    OptionalKind(DRA_GROUP_VERSION, "deviceclasses", "DeviceClass"): Kind.DEVICE_CLASS,
    OptionalKind(DRA_GROUP_VERSION, "resourceclaims", "ResourceClaim"): Kind.RESOURCE_CLAIM,
    OptionalKind(DRA_GROUP_VERSION, "resourceclaimtemplates", "ResourceClaimTemplate"):
        Kind.CLAIM_TEMPLATE,
}


def claim_path(namespace: str, name: str, subresource: str = "") -> str:
    """The URL of a ResourceClaim (or its `status`)."""
    path = f"/apis/{DRA_GROUP_VERSION}/namespaces/{namespace}/resourceclaims/{name}"
    return f"{path}/{subresource}" if subresource else path
