"""The same cluster with its GPUs published through DRA: the simulator's `phalanx-dra`.

Every node's `nvidia.com/gpu` becomes devices gpu-0..N-1 of a ResourceSlice in the NVIDIA
DRA driver's shape (pool = node, class gpu.nvidia.com), and every pod's whole GPUs a
ResourceClaim asking for that many devices of the class. A pod that runs holds its
claim, allocated to the devices it was placed on. The core then places and allocates
through its DRA path (`core/snapshot/claims.py`, `core/placement/claims.py`) instead of
the extended resource: run side by side with `phalanx` on one workload, the two say how
far the DRA path's decisions are from the extended resource's
(`python -m bench.dra --sim`). GPU sharing has no DRA form here: a workload with
fractional pods is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

from phalanx.core.model.dra import (
    NVIDIA_GPU_CLASS,
    NVIDIA_GPU_DRIVER,
    AllocatedDevice,
    Claim,
    ClaimSpec,
    Device,
    DeviceAsk,
    DeviceRequest,
    DraInventory,
)
from phalanx.core.model.inputs import NodeInfo, PodClaim, PodInfo
from phalanx.core.model.names import GPU

DRIVER = NVIDIA_GPU_DRIVER
ENTRY = "gpus"


def device_name(index: int) -> str:
    return f"gpu-{index}"


def device_index(name: str) -> int:
    return int(name.removeprefix("gpu-"))


def as_dra(
    nodes: Sequence[NodeInfo], pods: Sequence[PodInfo]
) -> tuple[tuple[NodeInfo, ...], tuple[PodInfo, ...], DraInventory]:
    """The nodes and pods with GPUs as DRA devices and claims, and the DRA objects (see
    the module's docstring): the fields of the snapshot the policy then makes once."""
    devices = tuple(d for node in nodes for d in _devices(node))
    claims: dict[str, Claim] = {}
    converted = []
    for pod in pods:
        if pod.fractional:
            raise ValueError(f"phalanx-dra models whole GPUs only: {pod.key} asks for part of one")
        count = pod.requests.get(GPU, 0) // 1000
        if not count:
            converted.append(pod)
            continue
        claim = _claim(pod, count)
        claims[claim.key] = claim
        requests = {k: v for k, v in pod.requests.items() if k != GPU}
        entry = PodClaim(ENTRY, claim.key)
        converted.append(replace(pod, requests=requests, claims=(entry,), gpu_devices=()))
    dra = DraInventory(
        devices=devices,
        classes={NVIDIA_GPU_CLASS.name: NVIDIA_GPU_CLASS},
        claims=claims,
        pod_claims={str(p.key): p.claims for p in converted if p.claims},
    )
    return tuple(_without_gpus(node) for node in nodes), tuple(converted), dra


def _devices(node: NodeInfo) -> tuple[Device, ...]:
    return _node_devices(node.name, node.allocatable.get(GPU, 0) // 1000)


@lru_cache(maxsize=1 << 16)
def _node_devices(node: str, count: int) -> tuple[Device, ...]:
    """A node's devices, made once: the same objects every cycle, as a slice unchanged
    between cycles is to the operator's cache."""
    return tuple(
        Device(
            DRIVER,
            node,
            device_name(i),
            {f"{DRIVER}/type": "gpu", f"{DRIVER}/uuid": f"GPU-{node}-{i}"},
            node=node,
        )
        for i in range(count)
    )


def _claim(pod: PodInfo, count: int) -> Claim:
    spec = ClaimSpec((DeviceRequest(ENTRY, (DeviceAsk(ENTRY, DRIVER, (), count),)),))
    name = f"{pod.name}-{ENTRY}"
    if pod.node_name is None:
        return Claim(pod.namespace, name, spec)
    held = tuple(
        AllocatedDevice(ENTRY, (DRIVER, pod.node_name, device_name(i))) for i in pod.gpu_devices
    )
    return Claim(pod.namespace, name, spec, held, pod.node_name, (pod.name,))


def _without_gpus(node: NodeInfo) -> NodeInfo:
    """The node as a DRA cluster shows it: made once per node object (the policy keeps
    its nodes), so the core's lowering sees the same node every cycle."""
    known = _NODES.get(id(node))
    if known is None or known[0] is not node:
        if len(_NODES) >= 1 << 16:
            _NODES.clear()
        allocatable = {k: v for k, v in node.allocatable.items() if k != GPU}
        known = _NODES[id(node)] = (node, replace(node, allocatable=allocatable))
    return known[1]


_NODES: dict[int, tuple[NodeInfo, NodeInfo]] = {}
