"""Small builders for core tests: typed objects with readable defaults."""

from __future__ import annotations

from collections.abc import Iterable

from phalanx.core import (
    CycleResult,
    GroupDecision,
    GroupInfo,
    GroupTopology,
    NodeInfo,
    PodInfo,
    SchedulerConfig,
    Snapshot,
    TopologyLevel,
    TopologySpec,
    run_cycle,
)
from phalanx.core.model.inputs import Taint

GPU = "nvidia.com/gpu"
GI = 2**30 * 1000
HOST = "kubernetes.io/hostname"


def node(
    name: str,
    gpus: int = 8,
    cpu: int = 64,
    labels: dict[str, str] | None = None,
    taints: tuple[Taint, ...] = (),
    ready: bool = True,
    unschedulable: bool = False,
    pods: int = 110,
) -> NodeInfo:
    allocatable = {"cpu": cpu * 1000, "memory": 512 * GI, GPU: gpus * 1000, "pods": pods * 1000}
    return NodeInfo(
        name=name,
        allocatable=allocatable,
        labels={HOST: name, **(labels or {})},
        taints=taints,
        ready=ready,
        unschedulable=unschedulable,
    )


def pod(
    name: str,
    gpus: int = 1,
    cpu: int = 1,
    group: str | None = None,
    node_name: str | None = None,
    namespace: str = "default",
    **fields: object,
) -> PodInfo:
    requests = {"cpu": cpu * 1000}
    if gpus:
        requests[GPU] = gpus * 1000
    phase = "Running" if node_name else "Pending"
    return PodInfo(
        namespace=namespace,
        name=name,
        requests=requests,
        node_name=node_name,
        phase=str(fields.pop("phase", phase)),
        group=group,
        **fields,  # type: ignore[arg-type]
    )


def group(
    name: str,
    min_member: int,
    namespace: str = "default",
    required: str | None = None,
    preferred: str | None = None,
    **fields: object,
) -> GroupInfo:
    topology = fields.pop("topology", None)
    if topology is None and (required or preferred):
        topology = GroupTopology(required=required, preferred=preferred)
    return GroupInfo(
        namespace=namespace,
        name=name,
        min_member=min_member,
        topology=topology,  # type: ignore[arg-type]
        **fields,  # type: ignore[arg-type]
    )


def gang(
    name: str, size: int, gpus: int, min_member: int | None = None, **fields: object
) -> tuple[GroupInfo, list[PodInfo]]:
    pods = [pod(f"{name}-{i}", gpus=gpus, group=name) for i in range(size)]
    return group(name, size if min_member is None else min_member, **fields), pods


def topology(name: str = "default", *levels: str) -> TopologySpec:
    """Levels named after their label key; `host` reads kubernetes.io/hostname."""
    return TopologySpec(
        name,
        tuple(TopologyLevel(level, (HOST if level == "host" else level,)) for level in levels),
    )


def racks(
    racks_count: int, hosts: int, gpus: int = 8, blocks: int = 1, prefix: str = "n"
) -> list[NodeInfo]:
    """blocks x racks x hosts nodes labelled block / rack (rack names repeat per block)."""
    nodes = []
    for b in range(blocks):
        for r in range(racks_count):
            for h in range(hosts):
                labels = {"block": f"b{b}", "rack": f"r{r}"}
                nodes.append(node(f"{prefix}-{b}-{r}-{h}", gpus=gpus, labels=labels))
    return nodes


def cycle(*items: Iterable[object] | object, config: SchedulerConfig | None = None) -> CycleResult:
    """Run one cycle on any mix of nodes, pods, groups, queues, topologies."""
    flat: list[object] = []
    for item in items:
        if isinstance(item, list | tuple):
            flat.extend(item)
        else:
            flat.append(item)
    return run_cycle(snapshot_of(flat), config)


def snapshot_of(objects: Iterable[object]) -> Snapshot:
    from phalanx.core import PriorityClassInfo, QueueInfo

    kinds: dict[type, list[object]] = {}
    for obj in objects:
        kinds.setdefault(type(obj), []).append(obj)
    return Snapshot(
        nodes=tuple(kinds.get(NodeInfo, [])),  # type: ignore[arg-type]
        pods=tuple(kinds.get(PodInfo, [])),  # type: ignore[arg-type]
        groups=tuple(kinds.get(GroupInfo, [])),  # type: ignore[arg-type]
        queues=tuple(kinds.get(QueueInfo, [])),  # type: ignore[arg-type]
        topologies=tuple(kinds.get(TopologySpec, [])),  # type: ignore[arg-type]
        priority_classes=tuple(kinds.get(PriorityClassInfo, [])),  # type: ignore[arg-type]
    )


def decision(result: CycleResult, key: str) -> GroupDecision:
    found = result.decision(key)
    assert found is not None, f"no decision for {key}"
    return found


def nodes_of(result: CycleResult, key: str) -> list[str]:
    return sorted(b.node for b in result.bindings if b.group == key)


def label_of(nodes: Iterable[NodeInfo], names: Iterable[str], label: str) -> set[str]:
    by_name = {n.name: n for n in nodes}
    return {by_name[name].labels[label] for name in names}
