"""The packing benchmark's loss analysis: why an arrival fails, and what could still use
the GPU left free."""

from __future__ import annotations

from bench.packing.losses import Watching, failure_reason, free_classes, gpu_shapes

from phalanx.sim.packing import PackCluster, PackNode, PackPod, run_packing
from phalanx.sim.packing.policies import BestFit

GIB = 1024


def test_a_failure_names_what_the_nodes_with_its_devices_lack() -> None:
    alone = PackCluster([PackNode("cpu-poor", 2_000, 64 * GIB, 1)])
    assert failure_reason(alone, PackPod("cpu", 8_000, 2 * GIB, 1, 1000)) == "cpu"
    assert failure_reason(alone, PackPod("memory", 1_000, 128 * GIB, 1, 1000)) == "memory"
    assert failure_reason(alone, PackPod("both", 8_000, 128 * GIB, 1, 1000)) == "cpu and memory"
    assert failure_reason(alone, PackPod("two", 1_000, GIB, 2, 1000)) == "devices"
    alone.place(0, PackPod("held", 0, 0, 1, 600), (0,))
    assert failure_reason(alone, PackPod("half", 1_000, GIB, 1, 500)) == "devices"
    pair = PackCluster(
        [PackNode("cpu-poor", 2_000, 64 * GIB, 1), PackNode("memory-poor", 32_000, 4 * GIB, 1)]
    )
    assert failure_reason(pair, PackPod("either", 8_000, 32 * GIB, 1, 1000)) == "cpu or memory"


def test_free_gpu_is_named_by_what_could_still_use_it() -> None:
    # shapes: half a GPU with 3 cores, a whole GPU with 1 core
    sequence = [PackPod("half", 3_000, GIB, 1, 500), PackPod("whole", 1_000, GIB, 1, 1000)]
    cluster = PackCluster([
        PackNode("roomy", 96_000, 512 * GIB, 2),  # a 190 rest and a whole device
        PackNode("exhausted", 1_200, 512 * GIB, 1),  # 0.7 cores after the pod "b"
        PackNode("small", 5_000, 512 * GIB, 1),  # 600 free beside 2 cores
    ])
    cluster.place(0, PackPod("a", 0, 0, 1, 810), (0,))
    cluster.place(1, PackPod("b", 500, 0, 0, 0), ())
    cluster.place(2, PackPod("c", 3_000, 0, 1, 400), (0,))
    assert free_classes(cluster, gpu_shapes(sequence)) == {
        "rest too small (rest)": 190,
        "usable (whole)": 1000,
        "node exhausted (whole)": 1000,
        "node too small (rest)": 600,
    }


def test_watching_counts_each_failure_by_kind_and_reason() -> None:
    nodes = [PackNode("n", 4_000, 64 * GIB, 1)]
    sequence = [PackPod("a", 3_000, GIB, 1, 600), PackPod("b", 2_000, GIB, 1, 300),
                PackPod("c", 500, GIB, 1, 600)]
    watching = Watching(BestFit())
    run_packing(watching, nodes, sequence, seed=1)
    assert watching.failures == {("fractional", "cpu"): 1, ("fractional", "devices"): 1}
