"""Free GPUs per domain have one definition (`phalanx.core.snapshot.gpus`): the NetworkTopology
status the operator writes, `kubectl phalanx topology` and the core say the same numbers
on a cluster with a cordoned node, a NotReady node and a busy one."""

from __future__ import annotations

import io
import re

from operator_fakes import FakeApi, settled_cycle

from deploy.objects import Obj, node, pod, topology
from deploy.test_kubectl_plugin import FakeKubectl
from phalanx.config import Settings
from phalanx.core.parse import snapshot_from_objects
from phalanx.core.snapshot.gpus import domain_gpus
from phalanx.kubectl import main as plugin
from phalanx.operator.cache import ClusterCache
from phalanx.operator.scheduler import Scheduler

EXPECTED = {"r0": 8, "r1": 5, "r2": 16}  # cordoned n0; NotReady n2; 3 GPUs used on n3


def cluster() -> list[Obj]:
    return [
        node("n0", "r0", cordoned=True), node("n1", "r0"),
        node("n2", "r1", ready=False), node("n3", "r1"),
        node("n4", "r2"), node("n5", "r2"),
        pod("busy", 3, node_name="n3"),
        topology(),
    ]


def core_counts(objects: list[Obj]) -> dict[str, int]:
    snapshot = snapshot_from_objects(objects)
    tree = snapshot.index.tree("default")
    counts = domain_gpus(snapshot, "default")
    return {tree.name(d): counts[d].free_gpus for d in range(tree.size)}


async def status_counts(objects: list[Obj]) -> dict[str, int]:
    api = FakeApi()
    await settled_cycle(Scheduler(ClusterCache.from_objects(objects), api, Settings()))
    (status,) = [b["status"] for m, p, b in api.calls
                 if p.endswith("/networktopologies/default/status")]
    return {row["name"]: row["freeGpus"] for row in status["tree"]}


def kubectl_counts(objects: list[Obj]) -> dict[str, int]:
    out = io.StringIO()
    assert plugin.main(["topology", "--all-levels"], out=out, runner=FakeKubectl(objects)) == 0
    found = {}
    for line in out.getvalue().splitlines()[1:]:
        match = re.search(r"(\w+) (\S+)\s+(\d+)/(\d+) GPUs free", line)
        assert match is not None, line
        found[match.group(2)] = int(match.group(3))
    return found


async def test_status_kubectl_and_core_agree_on_free_gpus_per_domain() -> None:
    objects = cluster()
    core = core_counts(objects)
    assert {name: core[name] for name in EXPECTED} == EXPECTED
    assert core[""] == sum(EXPECTED.values())  # the whole cluster
    status = await status_counts(objects)
    kubectl = kubectl_counts(objects)
    for name, free in core.items():
        if name.count("/") == 1:  # a host: the status leaves it to its Node
            assert name not in status, name
        elif name:  # the status lists racks, below the cluster
            assert status[name] == free, name
        leaf = name.rsplit("/", 1)[-1] or "default"
        assert kubectl[leaf] == free, name
    assert len(status) == 3


def shared_pod(name: str, fraction: str, node_name: str, device: int) -> Obj:
    body = pod(name, 0, node_name=node_name)
    body["metadata"]["annotations"] = {"scheduling.phalanx.io/gpu-fraction": fraction,
                                       "scheduling.phalanx.io/gpu-index": str(device)}
    return body


async def test_status_kubectl_and_core_agree_on_fragmented_gpus() -> None:
    """GPUs that fractional pods share are not free, in all three, and all three say how
    many are fragmented."""
    objects = [*cluster(), shared_pod("a", "0.25", "n5", 0), shared_pod("b", "0.5", "n5", 1)]
    snapshot = snapshot_from_objects(objects)
    tree = snapshot.index.tree("default")
    counts = domain_gpus(snapshot, "default")
    core = {tree.name(d): (counts[d].free_gpus, counts[d].fragmented) for d in range(tree.size)}
    assert core["r2"] == (14, 2)
    api = FakeApi()
    await settled_cycle(Scheduler(ClusterCache.from_objects(objects), api, Settings()))
    (status,) = [b["status"] for m, p, b in api.calls
                 if p.endswith("/networktopologies/default/status")]
    rows = {row["name"]: (row["freeGpus"], row.get("fragmentedGpus", 0)) for row in status["tree"]}
    assert rows["r2"] == core["r2"] and rows["r0"] == core["r0"] == (8, 0)
    out = io.StringIO()
    assert plugin.main(["topology", "--all-levels"], out=out, runner=FakeKubectl(objects)) == 0
    line = next(row for row in out.getvalue().splitlines() if " r2 " in row)
    assert "14/16 GPUs free" in line and "2 GPUs fragmented (1.25 free)" in line


async def test_a_finest_level_of_several_nodes_per_domain_is_listed() -> None:
    """Only a host level is left out: with racks as the finest level, racks are listed."""
    objects = cluster()
    racks_only = topology()
    racks_only["spec"]["levels"] = racks_only["spec"]["levels"][:1]
    status = await status_counts([*objects[:-1], racks_only])
    assert status == EXPECTED
