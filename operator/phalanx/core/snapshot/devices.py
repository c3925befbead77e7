"""A node's GPUs as devices: what each pod holds of which device, rebuilt from the pods.

A whole-GPU pod (`requests["nvidia.com/gpu"]`, k x 1000) holds k devices entirely; a
fractional pod (`PodInfo.gpu_milli`, or `gpu_memory` turned into a part of the node's
GPU memory) holds part of exactly one. The devices a pod holds are written on it (the
annotation scheduling.phalanx.io/gpu-index) together with its bind or un-gate, so the
usage is a function of the pods alone: a restarted operator, the simulator and
`phalanx plan` rebuild the same picture. Pods placed without that annotation (by another
scheduler, or before Phalanx shared GPUs) get devices here by the same choice the core
makes, whole-GPU pods first, so the rebuild never depends on the order pods arrived in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from phalanx.core.model.device_share import DEVICE, DeviceShare
from phalanx.core.model.inputs import NodeInfo, PodInfo
from phalanx.core.model.names import GPU, PodKey
from phalanx.core.snapshot.device_choice import choose_devices

NO_FIT = DEVICE + 1  # the part a pod would take of a device it cannot use at all


@dataclass(frozen=True, slots=True)
class DeviceUsage:
    """`used[i]`: milli of device i held by the node's pods (may pass 1000 only when the
    pods themselves over-commit it); `shares`: what each of those pods holds."""

    used: tuple[int, ...]
    shares: Mapping[PodKey, tuple[DeviceShare, ...]]


def whole_devices(pod: PodInfo) -> int:
    """Whole GPUs the pod asks for (a request not a multiple of 1000 is rounded up)."""
    return -(-pod.requests.get(GPU, 0) // DEVICE)


def pod_milli(pod: PodInfo, node: NodeInfo) -> int:
    """The part of one device a fractional pod takes on `node` (0: not fractional)."""
    return part_of(pod.gpu_milli, pod.gpu_memory, node)


def part_of(gpu_milli: int, gpu_memory: int, node: NodeInfo) -> int:
    """Milli of one of the node's devices that a request of `gpu_milli`, or of
    `gpu_memory` MiB (rounded up), takes. A memory request on a node of unknown GPU
    memory, or above one GPU's memory, gives more than DEVICE: it fits no device there."""
    if gpu_milli:
        return gpu_milli
    if not gpu_memory:
        return 0
    memory = node.gpu_memory
    return -(-gpu_memory * DEVICE // memory) if memory > 0 else NO_FIT


def holds_gpus(pod: PodInfo) -> bool:
    return pod.fractional or GPU in pod.requests or bool(pod.gpu_devices)


def slots(used: Sequence[int], milli: int) -> int:
    """How many more pods each taking `milli` of one device the devices take."""
    if milli <= 0 or milli > DEVICE:
        return 0
    return sum((DEVICE - taken) // milli for taken in used if taken < DEVICE)


@lru_cache(maxsize=1 << 14)
def known_slots(used: tuple[int, ...]) -> dict[int, int]:
    """`slots` of devices in this state, per part of a device asked so far (filled in by
    `CycleState`): remembered by the devices' content, so nodes and cycles share the few
    device states of a cluster (every fractional shape of a late Alibaba simulator cycle
    asked ~6,000 node and part pairs afresh, a twentieth of the cycle, mostly of states
    seen on other nodes or in the cycle before), and a node asked for several parts
    looks its state up once. Keyed by content, it cannot go stale; bounded, it cannot
    grow without end in the operator."""
    return {}


def whole_free(used: Sequence[int]) -> int:
    """Devices nothing holds: all a whole-GPU pod can use."""
    return sum(1 for taken in used if taken == 0)


def owned_whole_free(node: NodeInfo, pods: Sequence[PodInfo]) -> int | None:
    """The node's devices nothing holds, when each of its pods holds whole devices no
    other pod holds: none fractional, the devices written on pods all different, no more
    whole GPUs asked than the node has. `device_usage` then gives every pod exactly
    `whole_devices(pod)` devices of its own (the written ones, the others free ones), so
    a pod gone frees that many whole devices: the victim search counts such nodes in
    plain integers without building their usage. None otherwise (over-committed, or a
    device may be shared)."""
    asked = 0
    written: set[int] = set()
    for pod in pods:
        if pod.fractional:
            return None
        said = _written(pod, node)
        if said is not None:
            indices = {share.index for share in said}
            if indices & written:
                return None
            written |= indices
        asked += whole_devices(pod)
    return node.gpu_count - asked if asked <= node.gpu_count else None


def pod_shares(pod: PodInfo, node: NodeInfo, used: list[int]) -> tuple[DeviceShare, ...] | None:
    """Choose devices for the pod on the node and take them in `used`; None when they
    do not fit (nothing taken)."""
    milli = pod_milli(pod, node)
    if milli:
        chosen = choose_devices(used, milli, 1)
        shares = tuple(DeviceShare(i, milli) for i in chosen) if chosen is not None else None
    else:
        count = whole_devices(pod)
        if not count:
            return ()
        chosen = choose_devices(used, DEVICE, count)
        shares = tuple(DeviceShare(i, DEVICE) for i in chosen) if chosen is not None else None
    if shares is not None:
        take(used, shares, 1)
    return shares


def take(used: list[int], shares: tuple[DeviceShare, ...], sign: int) -> None:
    for share in shares:
        used[share.index] += sign * share.milli


def device_usage(node: NodeInfo, pods: Sequence[PodInfo]) -> DeviceUsage:
    """The node's devices as its (unfinished) pods hold them: pods that say which devices
    they hold first (whole-GPU pods, then fractional ones), then the others, whole-GPU
    pods before fractional ones, each in the given order; a pod that no longer fits (the
    pods over-commit the node) is put on the least used devices.

    A whole-GPU pod that says it holds a device an earlier whole-GPU pod already says it
    holds is placed like a pod that says nothing: the kubelet's device plugin gives each
    whole GPU to one pod, so two such pods hold two devices whatever their annotations
    say, and the picture must free as many whole devices as the node's GPU count does
    (`CycleState.slots` reads one or the other). Fractions are kept where they say they
    are, over-committing a device if they do: that is what sharing by index does."""
    used, shares, unsaid = _as_written(node, pods)
    if used and max(used) > DEVICE:  # some annotations over-commit a device: whole GPUs first
        whole_first = sorted(pods, key=lambda p: p.fractional)
        used, shares, unsaid = _as_written(node, whole_first, whole_apart=True)
    ordered = sorted(unsaid, key=lambda p: p.fractional)
    start = 0 if any(used) else _in_index_order(ordered, node, used, shares)
    for pod in ordered[start:]:
        chosen = pod_shares(pod, node, used)
        if chosen is None:
            chosen = overcommitted(pod, node, used)
            take(used, chosen, 1)
        shares[pod.key] = chosen
    return DeviceUsage(tuple(used), shares)


def _as_written(
    node: NodeInfo, pods: Sequence[PodInfo], whole_apart: bool = False
) -> tuple[list[int], dict[PodKey, tuple[DeviceShare, ...]], list[PodInfo]]:
    """Every pod that says which devices it holds, on them, in the given order; the
    others, to be placed. `whole_apart`: a whole-GPU pod that names a device already held
    joins the others. Where no device ends above 1,000 milli no whole-GPU pod shares a
    device, so without it the same comes out in one plain pass (the usage of every node is
    rebuilt each cycle: the common case must stay cheap)."""
    used = [0] * node.gpu_count
    shares: dict[PodKey, tuple[DeviceShare, ...]] = {}
    unsaid: list[PodInfo] = []
    for pod in pods:
        said = _written(pod, node)
        if said is None or (
            whole_apart and not pod.fractional and any(used[s.index] for s in said)
        ):
            unsaid.append(pod)
        else:
            shares[pod.key] = said
            take(used, said, 1)
    return used, shares, unsaid


def _in_index_order(pods: Sequence[PodInfo], node: NodeInfo, used: list[int],
                    shares: dict[PodKey, tuple[DeviceShare, ...]]) -> int:
    """On a node nothing else holds, the leading whole-GPU pods take devices in index
    order, as `choose_devices` would give them (every free device scores the same for a
    whole GPU, ties go to the lower index) without scoring and sorting each: a victim
    search rebuilds the usage of every node it touches (~1,550 in bench-core's preempt,
    a third of its cycle). How many pods were placed; the rest go the general way."""
    cursor = 0
    for placed, pod in enumerate(pods):
        count = whole_devices(pod)
        if pod_milli(pod, node) or cursor + count > len(used):
            return placed
        chosen = tuple(DeviceShare(i, DEVICE) for i in range(cursor, cursor + count))
        for i in range(cursor, cursor + count):
            used[i] = DEVICE
        cursor += count
        shares[pod.key] = chosen
    return len(pods)


def _written(pod: PodInfo, node: NodeInfo) -> tuple[DeviceShare, ...] | None:
    """The shares the pod's annotation states, if it states a usable set: indices on the
    node, distinct, one for a fractional pod, as many as its whole GPUs otherwise."""
    indices = pod.gpu_devices
    if not indices or len(set(indices)) != len(indices):
        return None
    if any(i < 0 or i >= node.gpu_count for i in indices):
        return None
    milli = pod_milli(pod, node)
    if milli:
        return (DeviceShare(indices[0], min(milli, DEVICE)),) if len(indices) == 1 else None
    if len(indices) != whole_devices(pod):
        return None
    return tuple(DeviceShare(i, DEVICE) for i in sorted(indices))


def overcommitted(pod: PodInfo, node: NodeInfo, used: list[int]) -> tuple[DeviceShare, ...]:
    """Where a pod goes that fits no device (its node is over-committed by pods placed
    without Phalanx): the least used devices, so the usage still accounts for it."""
    milli = min(pod_milli(pod, node), DEVICE)
    count = 1 if milli else min(whole_devices(pod), len(used))
    least = sorted(range(len(used)), key=lambda i: (used[i], i))[:count]
    return tuple(DeviceShare(i, milli or DEVICE) for i in sorted(least))
