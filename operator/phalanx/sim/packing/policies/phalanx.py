"""Phalanx: each arriving pod placed by the core itself (`phalanx.core.placement.gang.place_gang`).

The core's cycle state (`CycleState`) is built once over the trace's nodes, as the
operator's snapshot would give it (allocatable cpu, memory, GPUs; the GPU model as GPU
Feature Discovery's `nvidia.com/gpu.product` label), and kept across arrivals: each pod
is a gang of one, placed where `run_cycle` would place it and recorded there, devices
included, before the next pod arrives. A fractional pod asks for `gpu_milli` of one GPU
(no `nvidia.com/gpu` request); the trace's `gpu_spec` becomes required node affinity
`nvidia.com/gpu.product In (models)`, as a pod with such a `nodeSelector`/affinity
would carry it on a real cluster.
"""

from __future__ import annotations

from phalanx.core.model.inputs import NodeInfo, NodeSelectorRequirement, NodeSelectorTerm, PodInfo
from phalanx.core.model.names import CPU, GPU, GPU_PRODUCT_LABEL, HOSTNAME_LABEL, MEMORY
from phalanx.core.placement.gang import GangRequest, place_gang
from phalanx.core.placement.state import CycleState
from phalanx.core.snapshot.picture import Snapshot
from phalanx.core.snapshot.shapes import shape_of
from phalanx.sim.packing.nodes import PackCluster, PackNode
from phalanx.sim.packing.policy import Placement
from phalanx.sim.packing.trace import DEVICE_MILLI, PackPod
from phalanx.topology.tree import ROOT_LEVEL

MIB = 2**20
NAMESPACE = "packing"


def node_info(node: PackNode) -> NodeInfo:
    labels = {HOSTNAME_LABEL: node.name}
    if node.model:
        labels[GPU_PRODUCT_LABEL] = node.model
    return NodeInfo(
        name=node.name,
        allocatable={
            CPU: node.cpu_milli,
            MEMORY: node.memory_mib * MIB * 1000,
            GPU: node.gpus * DEVICE_MILLI,
        },
        labels=labels,
    )


def pod_info(pod: PackPod, name: str) -> PodInfo:
    requests = {CPU: pod.cpu_milli, MEMORY: pod.memory_mib * MIB * 1000}
    if pod.gpus and not pod.fractional:
        requests[GPU] = pod.gpus * DEVICE_MILLI
    affinity: tuple[NodeSelectorTerm, ...] = ()
    if pod.gpus and pod.models:
        requirement = NodeSelectorRequirement(GPU_PRODUCT_LABEL, "In", pod.models)
        affinity = (NodeSelectorTerm(match_expressions=(requirement,)),)
    return PodInfo(
        namespace=NAMESPACE,
        name=name,
        requests=requests,
        affinity=affinity,
        gpu_milli=pod.gpu_milli if pod.fractional else 0,
    )


class PhalanxCore:
    name = "phalanx"

    def __init__(self) -> None:
        self._state: CycleState | None = None
        self._cluster = 0
        self._position: list[int] = []
        self._arrived = 0

    def _start(self, cluster: PackCluster) -> CycleState:
        snapshot = Snapshot(nodes=[node_info(n) for n in cluster.nodes])
        where = {n.name: i for i, n in enumerate(cluster.nodes)}
        self._position = [where[n.name] for n in snapshot.index.nodes]
        self._cluster = id(cluster)
        self._state = CycleState(snapshot.index)
        return self._state

    def choose(self, cluster: PackCluster, pod: PackPod) -> Placement | None:
        state = self._state
        if state is None or self._cluster != id(cluster):
            state = self._start(cluster)
        self._arrived += 1
        info = pod_info(pod, f"pod-{self._arrived:06d}")
        shape = shape_of(info)
        state.mix.observe(info)
        request = GangRequest(
            pods=(info,),
            shapes=(shape,),
            demand=((shape, 1),),
            topology=None,
            limit=ROOT_LEVEL,
            fragmentation=True,
        )
        placed = place_gang(state, request)
        if placed is None:
            return None
        node = placed.assignments[0][1]
        devices = tuple(share.index for share in state.shares.get(info.key, ()))
        return self._position[node], devices
