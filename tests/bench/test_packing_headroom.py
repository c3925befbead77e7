"""The packing benchmark's headroom analysis: its bound and its split of the free GPU."""

from __future__ import annotations

from bench.packing.headroom import Recording, fillable, split_free, unavoidable_free

from phalanx.sim.packing import PackCluster, PackNode, PackPod, run_packing
from phalanx.sim.packing.policies import BestFit
from phalanx.sim.packing.policy import Placement


def frac(name: str, milli: int, cpu: int = 1000) -> PackPod:
    return PackPod(name, cpu, 1024, 1, milli)


def test_a_rest_is_filled_only_by_pods_that_fit_it() -> None:
    assert fillable([190], [320]) == 0
    assert fillable([190, 350], [320]) == 320
    assert fillable([190], [160, 50, 320]) == 190


def test_fillable_splits_pods_among_the_rests_they_fit_so_it_bounds_from_above() -> None:
    # Whole pods fill 160 of each 190 rest (320); split, the three pods fill all 380.
    assert fillable([190, 190], [160, 160, 160]) == 380
    # the 50s fill the 60 rest (split) and 40 of the 190 one, the 160 the remaining 150
    assert fillable([60, 190], [160, 50, 50]) == 250


def test_unavoidable_free_counts_the_prefix_big_fractions_and_the_whole_sequence_small_ones() -> (
    None
):
    prefix = [frac("a", 810), frac("b", 810), frac("c", 470), PackPod("cpu", 1000, 1024)]
    sequence = [*prefix, frac("d", 160), frac("e", 50), frac("f", 810)]
    # two rests of 190 (the 810 after the prefix is not counted), 210 of small pods
    assert unavoidable_free(prefix, sequence) == 380 - 210


def test_split_free_names_each_device_and_whether_its_node_still_takes_a_gpu_pod() -> None:
    cluster = PackCluster(
        [PackNode("roomy", 96_000, 512 * 1024, 2), PackNode("tight", 2_000, 512 * 1024, 1)]
    )
    sequence = [frac("big", 810, cpu=1000), frac("small", 300, cpu=2000), frac("late", 990)]
    cluster.place(0, sequence[0], (0,))
    cluster.place(1, sequence[1], (0,))
    split = split_free(cluster, sequence, [(0, (0,)), (1, (0,)), None])
    assert split.total == 190 + 1000 + 700
    assert split.parts == {
        "beside 810": 190,
        "whole device": 1000,
        "other partly used, cpu/memory exhausted": 700,
    }


def test_recording_keeps_every_choice_and_the_run_s_cluster() -> None:
    nodes = [PackNode("n", 8_000, 64 * 1024, 1)]
    sequence = [frac("a", 600), frac("b", 600), frac("c", 400)]
    policy = Recording(BestFit())
    result = run_packing(policy, nodes, sequence, seed=1)
    assert policy.choices == [(0, (0,)), None, (0, (0,))]
    assert policy.cluster is not None
    assert policy.cluster.allocated_gpu_milli == result.allocated_gpu_milli == 1000


def test_split_free_also_names_each_device_by_the_fractions_it_holds() -> None:
    cluster = PackCluster([PackNode("n", 96_000, 512 * 1024, 3)])
    sequence = [frac("a", 470), frac("b", 470), frac("c", 810), frac("d", 320)]
    choices: list[Placement | None] = [(0, (0,)), (0, (0,)), (0, (1,)), None]
    for pod, where in zip(sequence, choices, strict=True):
        if where is not None:
            cluster.place(where[0], pod, where[1])
    split = split_free(cluster, sequence, choices)
    # the unplaced 320 is on no device; device 2 is whole
    assert split.contents == {(470, 470): 60, (810,): 190, (): 1000}
