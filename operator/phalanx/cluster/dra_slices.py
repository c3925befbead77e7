"""The kwok stand-in for the NVIDIA DRA driver: each GPU node's GPUs as a ResourceSlice.

kwok runs no kubelet, so no DRA kubelet plugin can publish devices. This module is the one
stand-in: for every node of a description whose `node.dra` is true it publishes what the
NVIDIA DRA Driver for GPUs publishes (driver `gpu.nvidia.com`, one pool per node named
after it, devices `gpu-0..N-1` with attributes `type`, `productName`, `uuid`,
`architecture`, `driverVersion` and capacity `memory`; the GPU's `index` is not published
since driver v25.8), and the driver's DeviceClass `gpu.nvidia.com`. The NVLink clique is not
a slice attribute: it stays the node label `nvidia.com/gpu.clique`. Such nodes advertise
no `nvidia.com/gpu` (description.py): a real cluster does not offer the same GPUs twice.
"""

from __future__ import annotations

import uuid
from typing import Any

from phalanx.cluster.description import ClusterDescription, NodeShape
from phalanx.cluster.rest import RestClient
from phalanx.core.model.dra import NVIDIA_GPU_CLASS, NVIDIA_GPU_DRIVER

DRIVER = NVIDIA_GPU_DRIVER
API_VERSION = "resource.k8s.io/v1"
DRIVER_VERSION = "580.95.5"  # the driver version the devices report (a semantic version)
ARCHITECTURES = (("B200", "Blackwell"), ("GB200", "Blackwell"), ("H100", "Hopper"),
                 ("H200", "Hopper"), ("A100", "Ampere"))


def device_class() -> dict[str, Any]:
    """The DeviceClass the driver's Helm chart installs: every device of the driver."""
    return {
        "apiVersion": API_VERSION,
        "kind": "DeviceClass",
        "metadata": {"name": NVIDIA_GPU_CLASS.name},
        "spec": {"selectors": [{"cel": {"expression": e}} for e in NVIDIA_GPU_CLASS.selectors]},
    }


def product_name(shape: NodeShape) -> str:
    """The GPU's product name as the driver reports it (GFD's label has '-' for ' ')."""
    return shape.gpu_product.replace("-", " ")


def architecture(shape: NodeShape) -> str:
    product = shape.gpu_product.upper()
    return next((arch for model, arch in ARCHITECTURES if model in product), "Unknown")


def resource_slice(shape: NodeShape, node: str) -> dict[str, Any]:
    """One node's GPUs: a pool of one slice, named and owned by the node's name."""
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {
                "type": {"string": "gpu"},
                "productName": {"string": product_name(shape)},
                "uuid": {"string": f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node}/gpu-{i}')}"},
                "architecture": {"string": architecture(shape)},
                "driverVersion": {"version": DRIVER_VERSION},
            },
            "capacity": {"memory": {"value": f"{shape.gpu_memory_mib}Mi"}},
        }
        for i in range(shape.gpus)
    ]
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": devices,
        },
    }


def slice_objects(description: ClusterDescription) -> list[dict[str, Any]]:
    """The DeviceClass and a slice per node, for a description with `node.dra`; [] else."""
    if not description.shape.dra or not description.shape.gpus:
        return []
    return [device_class(),
            *(resource_slice(description.shape, host.name) for host in description.hosts)]


def publish(client: RestClient, description: ClusterDescription) -> int:
    """Create the description's DRA objects (those already there are left alone);
    returns how many slices the cluster has for its nodes."""
    objects = slice_objects(description)
    for body in objects:
        plural = "deviceclasses" if body["kind"] == "DeviceClass" else "resourceslices"
        response = client.post(f"/apis/{API_VERSION}/{plural}", body)
        if response.status not in (201, 409):
            raise RuntimeError(f"creating {body['kind']} {body['metadata']['name']}: "
                               f"{response.body}")
    return max(0, len(objects) - 1)
