"""DRA objects for the core's tests, in the NVIDIA DRA driver's shape: each node's GPUs as
devices of driver gpu.nvidia.com (productName, uuid, pcieRoot; memory as capacity)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from phalanx.core.model.dra import (
    NVIDIA_GPU_CLASS,
    NVIDIA_GPU_DRIVER,
    Claim,
    ClaimSpec,
    Device,
    DeviceAsk,
    DeviceClass,
    DeviceRequest,
    DraInventory,
    MatchAttribute,
    PodClaim,
)
from phalanx.core.model.inputs import NodeInfo, PodInfo

DRIVER = NVIDIA_GPU_DRIVER
H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-40GB"
GPU_CLASS = NVIDIA_GPU_CLASS
IS_H100 = f'device.attributes["{DRIVER}"].productName == "{H100}"'


def gpus(node: str, count: int = 8, product: str = H100, memory_gi: int = 80) -> list[Device]:
    """A node's GPUs, four to a PCIe root."""
    return [
        Device(
            DRIVER,
            node,
            f"gpu-{i}",
            {
                f"{DRIVER}/productName": product,
                f"{DRIVER}/uuid": f"GPU-{node}-{i}",
                f"{DRIVER}/pcieRoot": f"pci-{i // 4}",
                f"{DRIVER}/type": "gpu",
            },
            {f"{DRIVER}/memory": memory_gi * 2**30 * 1000},
            node=node,
        )
        for i in range(count)
    ]


def gpu_spec(
    count: int, *selectors: str, same: str | None = None, request: str = "gpus"
) -> ClaimSpec:
    """A claim asking for `count` GPUs of the class, meeting `selectors`; `same`: all on
    one value of that attribute (matchAttribute)."""
    constraints = (MatchAttribute(f"{DRIVER}/{same}"),) if same else ()
    ask = DeviceAsk(request, DRIVER, tuple(selectors), count)
    return ClaimSpec((DeviceRequest(request, (ask,)),), constraints)


def inventory(
    devices: Iterable[Device],
    pods: Sequence[PodInfo],
    template: ClaimSpec | None = None,
    claims: Sequence[Claim] = (),
    uses: dict[str, str] | None = None,
    classes: Sequence[DeviceClass] = (GPU_CLASS,),
) -> DraInventory:
    """Every pod in `pods` gets entry "gpus" from the template default/gpus, unless
    `uses` names a claim ("NAME") it uses instead."""
    uses = uses or {}
    pod_claims = {}
    for pod in pods:
        if pod.key in uses:
            pod_claims[pod.key] = (PodClaim("gpus", f"{pod.namespace}/{uses[pod.key]}"),)
        elif template is not None:
            pod_claims[pod.key] = (PodClaim("gpus", None, f"{pod.namespace}/gpus"),)
    return DraInventory(
        devices=tuple(devices),
        classes={c.name: c for c in classes},
        claims={c.key: c for c in claims},
        templates={"default/gpus": template} if template is not None else {},
        pod_claims=pod_claims,
    )


def no_gpu_nodes(nodes: Iterable[NodeInfo]) -> list[NodeInfo]:
    """The nodes as a DRA cluster shows them: no nvidia.com/gpu extended resource."""
    return [
        replace(n, allocatable={k: v for k, v in n.allocatable.items() if k != "nvidia.com/gpu"})
        for n in nodes
    ]
