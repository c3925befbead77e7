"""Free GPUs per node and per domain: the one definition the status, the plugin and the
gauges read."""

from __future__ import annotations

from dataclasses import replace

from core_builders import HOST, node, pod, racks

from phalanx.core import Snapshot
from phalanx.core.snapshot.gpus import domain_gpus, node_gpus
from phalanx.topology import TopologyLevel, TopologySpec

SPEC = TopologySpec("default", (TopologyLevel("block", ("block",)),
                                TopologyLevel("rack", ("rack",)), TopologyLevel("host", (HOST,))))


def counts_by_name(snapshot: Snapshot) -> dict[str, tuple[int, int, int, int]]:
    tree = snapshot.index.tree("default")
    return {tree.name(d): (c.nodes, c.gpus, c.free_gpus, c.whole_free_nodes)
            for d, c in enumerate(domain_gpus(snapshot, "default"))}


def test_domains_count_nodes_gpus_and_free_gpus() -> None:
    busy = [pod("busy", gpus=3, node_name="n-0-1-0")]
    counts = counts_by_name(Snapshot(nodes=racks(2, 2, gpus=8), pods=busy, topologies=(SPEC,)))
    assert counts["b0"] == (4, 32, 29, 3)
    assert counts["b0/r1"] == (2, 16, 13, 1)
    assert counts["b0/r1/n-0-1-0"] == (1, 8, 5, 0)


def test_cordoned_and_not_ready_nodes_offer_no_free_gpus_but_count_in_the_total() -> None:
    nodes = [node("a", labels={"block": "b0", "rack": "r0"}, unschedulable=True),
             node("b", labels={"block": "b0", "rack": "r0"}, ready=False),
             node("c", labels={"block": "b0", "rack": "r0"})]
    counts = counts_by_name(Snapshot(nodes=nodes, topologies=(SPEC,)))
    assert counts["b0/r0"] == (3, 24, 8, 1)
    gone = node_gpus(nodes[0], 8000)
    assert (gone.total, gone.used, gone.idle, gone.free) == (8000, 0, 8000, 0)


def test_a_half_free_gpu_is_not_a_free_gpu() -> None:
    nodes = [node("a", gpus=1, labels={"block": "b0", "rack": "r0"}),
             node("b", gpus=1, labels={"block": "b0", "rack": "r0"})]
    half = [replace(pod(name, node_name=name), requests={"nvidia.com/gpu": 500})
            for name in ("a", "b")]
    counts = counts_by_name(Snapshot(nodes=nodes, pods=half, topologies=(SPEC,)))
    assert counts["b0/r0"][2] == 0


def shared(name: str, milli: int, on: str, device: int) -> object:
    return pod(name, gpus=0, gpu_milli=milli, node_name=on, gpu_devices=(device,))


def test_gpus_that_fractional_pods_share_are_fragmented_not_free() -> None:
    """One definition for the status, `kubectl phalanx topology` and the gauges: a GPU
    with any part taken is not free; its free part shows as fragmented."""
    from phalanx.kubectl.topology import domain_rows, format_tree
    from phalanx.observe.gpu_usage import gpu_usage
    from phalanx.operator.topology_status import topology_status

    nodes = racks(1, 2, gpus=4)
    held = [shared("a", 250, "n-0-0-0", 0), shared("b", 500, "n-0-0-0", 1),
            pod("w", gpus=1, node_name="n-0-0-0", gpu_devices=(2,))]
    snapshot = Snapshot(nodes=nodes, pods=held, topologies=(SPEC,))
    rack = next(c for d, c in enumerate(domain_gpus(snapshot, "default"))
            if snapshot.index.tree("default").name(d) == "b0/r0")
    assert (rack.gpus, rack.free_gpus, rack.fragmented, rack.fragment_free) == (8, 5, 2, 1250)
    status = topology_status(snapshot, "default")
    assert status is not None
    row = next(r for r in status["tree"] if r["name"] == "b0/r0")
    assert (row["freeGpus"], row["fragmentedGpus"], row["fragmentedFreeMilli"]) == (5, 2, 1250)
    text = format_tree(domain_rows(snapshot, "default"))
    assert "5/8 GPUs free" in text and "2 GPUs fragmented (1.25 free)" in text
    usage = gpu_usage(snapshot)
    assert (usage.allocated, usage.free) == (1.75, 6.25)


def test_without_fractional_pods_nothing_is_fragmented_and_the_tree_is_unchanged() -> None:
    from phalanx.kubectl.topology import domain_rows, format_tree

    snapshot = Snapshot(nodes=racks(1, 2, gpus=4), topologies=(SPEC,))
    assert all(c.fragmented == 0 for c in domain_gpus(snapshot, "default"))
    assert "fragmented" not in format_tree(domain_rows(snapshot, "default"))


def test_queue_usage_in_the_status_counts_the_part_a_gpu_memory_pod_takes() -> None:
    from core_builders import group, snapshot_of

    from phalanx.core import QueueInfo
    from phalanx.core.model.names import GPU_MEMORY_LABEL
    from phalanx.operator.topology_status import allocated_by_queue

    big = node("n", gpus=4, labels={GPU_MEMORY_LABEL: "80000"})
    held = pod("m", gpus=0, gpu_memory=20000, node_name="n", gpu_devices=(0,), group="g")
    snapshot = snapshot_of([big, held, group("g", 1, queue="team"), QueueInfo("team")])
    assert allocated_by_queue(snapshot)["team"]["nvidia.com/gpu"] == "0.25"
