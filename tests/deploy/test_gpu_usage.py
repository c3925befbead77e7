"""GPU usage and fragmentation figures, computed from a core snapshot."""

from __future__ import annotations

from phalanx.core.parse import snapshot_from_objects
from phalanx.observe.gpu_usage import gpu_usage

from .objects import node, pod


def test_free_gpus_on_partly_busy_nodes_count_as_unusable_for_whole_nodes() -> None:
    snapshot = snapshot_from_objects(
        [
            node("n1", "r1"),
            node("n2", "r1"),
            node("n3", "r2"),
            pod("a", 2, node_name="n1"),
            pod("b", 8, node_name="n2"),
            pod("waiting", 4),
        ]
    )
    usage = gpu_usage(snapshot)
    assert usage.allocated == 10
    assert usage.free == 14  # 6 on n1, 8 on n3; the pending pod holds nothing
    assert usage.free_unusable_whole_node == 6
    assert (usage.fully_free_nodes, usage.gpu_nodes) == (1, 3)


def test_nodes_that_take_no_pods_offer_no_free_gpus() -> None:
    snapshot = snapshot_from_objects(
        [
            node("ok", "r1"),
            node("down", "r1", ready=False),
            node("cordoned", "r1", cordoned=True),
            pod("a", 4, node_name="down"),
        ]
    )
    usage = gpu_usage(snapshot)
    assert usage.free == 8
    assert usage.allocated == 4  # pods on a NotReady node still hold their GPUs
    assert usage.free_unusable_whole_node == 0


def test_finished_pods_free_their_gpus_and_nodes_without_gpus_are_ignored() -> None:
    done = pod("done", 8, node_name="n1")
    done["status"]["phase"] = "Succeeded"
    cpu_only = node("cpu", "r1", gpus=0)
    usage = gpu_usage(snapshot_from_objects([node("n1", "r1"), cpu_only, done]))
    assert (usage.allocated, usage.free, usage.gpu_nodes) == (0, 8, 1)
