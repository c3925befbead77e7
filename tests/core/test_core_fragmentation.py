"""Fragmentation-aware choice of node: a lone pod goes where the workload's typical GPU
pods lose the least, counting cpu and memory; whole nodes are opened last; CPU-only pods
keep off GPU nodes when they can; the same state always gives the same choice."""

from __future__ import annotations

from dataclasses import replace

from core_builders import cycle, node, pod, snapshot_of

from phalanx.core import NodeInfo, PodInfo
from phalanx.core.model.config import SchedulerConfig
from phalanx.core.placement.fragmentation import Profile, ShapeMix
from phalanx.core.placement.node_choice import (
    CANDIDATES,
    ONE_GPU_CANDIDATES,
    PodAsk,
    added_fragmentation,
    grade,
    least_fragmenting,
)
from phalanx.core.placement.state import CycleState
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.snapshot.shapes import shape_of

GI = 2**30


def placed(result: object) -> dict[str, str]:
    return {b.pod: b.node for b in result.bindings}  # type: ignore[attr-defined]


def test_typical_shapes_are_the_most_frequent_covering_95_percent() -> None:
    pods = [pod(f"a{i}", gpus=1, cpu=4) for i in range(60)]
    pods += [pod(f"b{i}", gpus=0, cpu=2, gpu_milli=500) for i in range(38)]
    pods += [pod(f"c{i}", gpus=2, cpu=8) for i in range(2)]
    pods += [pod(f"cpu{i}", gpus=0) for i in range(50)]  # CPU-only: no GPU shape
    mix = ShapeMix(pods)
    assert [(p.cpu, p.milli, p.count) for p, _ in mix.typical()] == [
        (4000, 1000, 1), (2000, 500, 1)
    ]
    assert [round(share, 3) for _, share in mix.typical()] == [round(60 / 98, 3), 0.388]


def test_the_window_forgets_old_pods() -> None:
    mix = ShapeMix(window=4)
    for i in range(70):
        mix.observe(pod(f"old{i}", gpus=1))
    for i in range(70):
        mix.observe(pod(f"new{i}", gpus=2))
    assert [p.count for p, _ in mix.typical()] == [2]


def test_fragmentation_counts_what_the_typical_shapes_cannot_use() -> None:
    mix = ShapeMix()
    mix.observe(pod("whole", gpus=1, cpu=4))
    mix.observe(pod("half", gpus=0, cpu=4, gpu_milli=500))
    assert set(mix.typical()) == {(Profile(4000, 1000, 1, 0), 0.5), (Profile(4000, 500, 1, 0), 0.5)}
    # devices free: 1000 and 300: whole pods lose the 300, half pods too
    assert mix.fragmentation(8000, GI, [1000, 300]) == 300
    # too little cpu: every free milli is lost to both
    assert mix.fragmentation(2000, GI, [1000, 300]) == 1300
    assert mix.fragmentation(8000, GI, [0, 0]) == 0


def test_a_change_of_a_few_milli_either_way_grades_as_nothing_lost() -> None:
    # truncated (FGD's int()), 15 milli lost would already grade worse than nothing lost
    assert grade(15.0) == grade(0.0) == grade(-15.0)
    assert grade(30.0) > grade(0.0) > grade(-30.0)


def test_a_gpu_pod_does_not_take_the_cpu_that_the_nodes_other_gpus_need() -> None:
    typical = [pod(f"t{i}", gpus=1, cpu=4, node_name="c") for i in range(2)]
    big = pod("big", gpus=1, cpu=8)
    result = cycle(node("a", gpus=2, cpu=8), node("b", gpus=2, cpu=32),
                   node("c", gpus=2, cpu=8), typical, big)
    # a is tighter for it, but would keep one GPU with no cpu left for any typical pod
    assert placed(result) == {"default/big": "b"}
    old = cycle(node("a", gpus=2, cpu=8), node("b", gpus=2, cpu=32),
                node("c", gpus=2, cpu=8), typical, big,
                config=SchedulerConfig(fragmentation_aware=False))
    assert placed(old) == {"default/big": "a"}


def test_a_cpu_only_pod_goes_to_a_node_without_gpus_first() -> None:
    typical = pod("t", gpus=1, cpu=4, node_name="a-gpu")
    result = cycle(node("a-gpu", gpus=8, cpu=64), node("b-cpu", gpus=0, cpu=64), typical,
                   pod("web", gpus=0, cpu=4))
    assert placed(result) == {"default/web": "b-cpu"}


def test_among_equal_grades_a_fraction_goes_to_a_partly_used_node_not_a_whole_one() -> None:
    held = pod("held", gpus=0, gpu_milli=500, node_name="b", gpu_devices=(3,))
    # the other half of b's device 3 or half of a fresh device of a: nothing lost either way
    result = cycle(node("a"), node("b"), held, pod("new", gpus=0, gpu_milli=500))
    assert placed(result) == {"default/new": "b"}


def test_the_same_state_gives_the_same_choice() -> None:
    nodes = [node(f"n{i}", gpus=g, cpu=c) for i, (g, c) in
             enumerate([(8, 96), (4, 32), (2, 16), (8, 64), (1, 8)])]
    running: list[PodInfo] = [
        pod("r0", gpus=0, gpu_milli=810, cpu=3, node_name="n0", gpu_devices=(0,)),
        pod("r1", gpus=2, cpu=12, node_name="n1", gpu_devices=(0, 1)),
        pod("r2", gpus=0, gpu_milli=470, cpu=2, node_name="n3", gpu_devices=(5,)),
    ]
    pending = [pod(f"p{i}", gpus=0, gpu_milli=m, cpu=2) for i, m in enumerate([470, 160, 320])]
    pending += [pod("w", gpus=1, cpu=8), pod("c", gpus=0, cpu=6)]
    first = cycle(nodes, running, pending)
    assert first.bindings == cycle(list(reversed(nodes)), running, pending).bindings


def test_a_pod_opens_a_whole_node_when_the_partly_used_one_would_lose_more() -> None:
    # typical pods: one GPU with 4 cpu, half a GPU with 4 cpu (all on the full node c)
    typical = [pod(f"t{i}", gpus=1, cpu=4, node_name="c", gpu_devices=(i,)) for i in range(2)]
    typical += [pod(f"h{i}", gpus=0, gpu_milli=500, cpu=4, node_name="c", gpu_devices=(2,))
                for i in range(2)]
    used = pod("w", gpus=1, cpu=8, node_name="a", gpu_devices=(0,))
    new = pod("new", gpus=0, gpu_milli=500, cpu=8)
    nodes = [node("a", gpus=2, cpu=16), node("b", gpus=2, cpu=32), node("c", gpus=3, cpu=16)]
    # on a it takes the last cpu: the 500 milli left there serve no typical pod; on b the
    # other half of its device still serves the half-GPU pods
    assert placed(cycle(nodes, typical, used, new)) == {"default/new": "b"}


def test_remembered_grades_follow_each_placement() -> None:
    """Pods placed one by one on one state (grades remembered between them) go where a
    fresh state with the same placements would put each of them."""
    nodes = [node(f"n{i}", gpus=4 if i % 2 else 2, cpu=16) for i in range(4)]
    typical = [pod(f"t{i}", gpus=2, cpu=4) for i in range(4)]
    arrivals = [pod(f"p{i}", gpus=1 + i % 2, cpu=2 + 2 * (i % 3)) for i in range(10)]
    index = ClusterIndex(snapshot_of([*nodes, *typical]))
    kept = CycleState(index)
    done: list[tuple[int, PodInfo]] = []
    for arrival in arrivals:
        fresh = CycleState(index)
        for where, placed_pod in done:
            fresh.place(where, placed_pod)
        shape = shape_of(arrival)
        everywhere = range(len(nodes))
        chosen = least_fragmenting(kept, shape, everywhere)
        assert chosen == least_fragmenting(fresh, shape, everywhere)
        if chosen is None:
            break
        kept.place(chosen, arrival)
        done.append((chosen, arrival))
    assert len(done) >= 6



def test_remembered_device_choices_follow_each_placement() -> None:
    """Fractions, whole-GPU and CPU-only pods placed one by one on one state (each node's
    free parts, and where each part or number of GPUs would go, remembered between them:
    `NodeGrades.free`, `NodeGrades.taken`) are graded on every node as on a fresh state
    with the same placements."""
    nodes = [node(f"n{i}", gpus=1 + i % 3, cpu=32) for i in range(5)]
    typical = [pod(f"t{i}", gpus=0, cpu=2, gpu_milli=250 * (1 + i % 3)) for i in range(6)]
    asks = [(0, 250), (1, 0), (0, 500), (0, 0), (2, 0), (0, 250), (0, 750), (0, 250)]
    arrivals = [pod(f"p{i}", gpus=gpus, cpu=1 + i % 4, gpu_milli=milli)
                for i, (gpus, milli) in enumerate(asks * 2)]  # fmt: skip
    index = ClusterIndex(snapshot_of([*nodes, *typical]))
    kept = CycleState(index)
    done: list[tuple[int, PodInfo]] = []
    everywhere = range(len(nodes))

    def grades(state: CycleState, arrival: PodInfo) -> list[object]:
        shape = shape_of(arrival)
        least_fragmenting(state, shape, everywhere)
        known = state.node_grades(state.mix.version)
        ask = PodAsk.of(shape)
        return [(known[i].sizes[state.grade_id(shape)],
                 added_fragmentation(state, i, shape, ask, known[i])) for i in everywhere]

    for arrival in arrivals:
        fresh = CycleState(index)
        for where, placed_pod in done:
            fresh.place(where, placed_pod)
        assert grades(kept, arrival) == grades(fresh, arrival)
        chosen = least_fragmenting(kept, shape_of(arrival), everywhere)
        if chosen is not None:
            kept.place(chosen, arrival)
            done.append((chosen, arrival))
    assert len(done) >= 10


def test_a_pod_does_not_leave_gpu_milli_beside_less_cpu_than_the_typical_pods_ask() -> None:
    # a: one device holds 810 milli (190 left); the pod would take a's whole free device
    # and 4 of its cores. The typical shape (1 GPU, 4 cores) loses the 190 either way, so
    # the grade is the same on a and on b (whole), and b would open a whole node. A rare
    # pod of 100 milli and 1 core (1 of 42 GPU pods, no typical shape) would still fit
    # the 190 beside 1 core, but pods like it do not keep arriving: with 8 cores a keeps
    # 1 after the pod, below the typical 4, so the pod goes to b; with 12 it keeps 5 and a
    # wins.
    held = pod("held", gpus=0, gpu_milli=810, cpu=3, node_name="a", gpu_devices=(0,))
    typical = [pod(f"t{i}", gpus=1, cpu=4, node_name="c", gpu_devices=(i,)) for i in range(40)]
    rare = pod("rare", gpus=0, gpu_milli=100, cpu=1, node_name="d", gpu_devices=(0,))
    new = pod("new", gpus=1, cpu=4)
    for cores, where in ((8, "b"), (12, "a")):
        nodes = [node("a", gpus=2, cpu=cores), node("b", gpus=2, cpu=32),
                 node("c", gpus=40, cpu=160), node("d", gpus=1, cpu=2)]
        assert placed(cycle(nodes, held, typical, rare, new)) == {"default/new": where}


def test_a_fractional_shape_uses_no_more_gpu_than_the_node_cpu_leaves_pods_for() -> None:
    mix = ShapeMix()
    mix.observe(pod("small", gpus=0, cpu=4, gpu_milli=100))
    # 2 free GPUs, cpu for 2 pods of 100 milli: 200 milli usable, 1,800 lost (FGD: none)
    assert mix.fragmentation(8000, GI, [1000, 1000]) == 1800
    assert mix.fragmentation(80000, GI, [1000, 1000]) == 0


def test_whole_gpu_shapes_are_capped_by_cpu_only_while_no_typical_shape_shares_a_device() -> None:
    whole = ShapeMix()
    whole.observe(pod("whole", gpus=1, cpu=4))
    # 2 free GPUs, cpu for one pod of one GPU: the other GPU is lost (FGD: none)
    assert whole.fragmentation(4000, GI, [1000, 1000]) == 1000
    assert whole.fragmentation(8000, GI, [1000, 1000]) == 0
    pair = ShapeMix()
    pair.observe(pod("pair", gpus=2, cpu=4))
    assert pair.fragmentation(4000, GI, [1000, 1000, 1000, 1000]) == 2000
    mixed = ShapeMix()
    mixed.observe(pod("whole", gpus=1, cpu=4))
    mixed.observe(pod("half", gpus=0, cpu=4, gpu_milli=500))
    # beside a fractional shape only the fraction is capped: one half pod of 500 milli
    # uses 500 of the 2,000 free, the whole shape loses nothing, so 0.5 x 1,500 is lost
    assert mixed.fragmentation(4000, GI, [1000, 1000]) == 750


def test_a_cpu_hungry_fraction_goes_where_cpu_is_left_for_the_small_ones() -> None:
    # typical: a quarter GPU with 4 cores (the 8-core pod is too rare to be typical).
    # On a (2 GPUs, 12 cores) it would leave cpu for one of them beside 1,750 free milli;
    # on b (40 cores) for eight. Asking only whether one typical pod still fits, a and b
    # are equal and a, first, would win.
    typical = [pod(f"t{i}", gpus=0, gpu_milli=250, cpu=4, node_name="c", gpu_devices=(i // 4,))
               for i in range(20)]
    hungry = pod("hungry", gpus=0, gpu_milli=250, cpu=8)
    nodes = [node("a", gpus=2, cpu=12), node("b", gpus=2, cpu=40), node("c", gpus=5, cpu=80)]
    assert placed(cycle(nodes, typical, hungry)) == {"default/hungry": "b"}


def test_a_cpu_only_pod_leaves_cpu_for_the_whole_gpu_pods_of_a_node() -> None:
    # typical: one GPU with 4 cores. On a (2 GPUs, 8 cores) the 4-core CPU-only pod would
    # leave cpu for one of them beside 2 free GPUs; on b (16 cores) for three. Asking only
    # whether one typical pod still fits, a and b are equal and a, first, would win.
    typical = [pod(f"t{i}", gpus=1, cpu=4, node_name="c", gpu_devices=(i,)) for i in range(20)]
    cpu_only = pod("cpu-only", gpus=0, cpu=4)
    nodes = [node("a", gpus=2, cpu=8), node("b", gpus=2, cpu=16), node("c", gpus=20, cpu=80)]
    assert placed(cycle(nodes, typical, cpu_only)) == {"default/cpu-only": "b"}


def test_fragmentation_is_the_share_weighted_loss_device_by_device() -> None:
    """FGD's sum over the typical shapes, each weighted by its share: all of the free milli
    for a shape the node cannot take (too little cpu, too few devices big enough), else
    what its devices too small for it hold, or for a fraction what its pods that the
    node's cpu still takes cannot use. Whole shapes are not capped by cpu here (fractional
    shapes are typical); the order of the devices changes nothing."""
    mix = ShapeMix()
    for i in range(4):  # share 4/8: 250 milli, 2 cores
        mix.observe(pod(f"quarter{i}", gpus=0, cpu=2, gpu_milli=250))
    for i in range(2):  # share 2/8: 600 milli, 4 cores
        mix.observe(pod(f"sixty{i}", gpus=0, cpu=4, gpu_milli=600))
    mix.observe(pod("pair", gpus=2, cpu=8))  # share 1/8
    mix.observe(pod("hungry", gpus=1, cpu=16))  # share 1/8
    # free 700 + 250 + 3 x 1,000 = 3,950, 10 cores:
    # quarter: every device fits it; 5 pods x 250 = 1,250 used: 0.5 x 2,700 = 1,350
    # sixty: the 250 is too small; 2 pods x 600 = 1,200 used of the 3,700: 0.25 x 2,750
    #   = 687.5
    # pair: the 700 and 250 are too small; the third whole device counts as usable though
    #   the cpu takes one pair only: 0.125 x 950 = 118.75
    # hungry: 10 cores < 16, all is lost: 0.125 x 3,950 = 493.75
    for free in ([700, 1000, 250, 1000, 1000], [1000, 1000, 1000, 700, 250]):
        assert mix.fragmentation(10_000, GI, free) == 1350 + 687.5 + 118.75 + 493.75
    # free 700 + 1,000 + 250 = 1,950, 40 cores:
    # quarter: 20 pods could use 5,000: 0; sixty: the 250 is too small: 0.25 x 250 = 62.5
    # pair: one whole device, not two: 0.125 x 1,950 = 243.75
    # hungry: fits; the 700 and 250 are too small: 0.125 x 950 = 118.75
    assert mix.fragmentation(40_000, GI, [700, 1000, 250]) == 0 + 62.5 + 243.75 + 118.75
    assert mix.fragmentation(40_000, GI, [0, 0]) == 0


def test_a_shape_is_counted_with_its_memory() -> None:
    mix = ShapeMix()
    mix.observe(replace(pod("half", gpus=0, cpu=1, gpu_milli=500),
                        requests={"cpu": 1000, "memory": 8 * GI}))
    # 2 x 1,000 free, cpu for 40 pods but memory for 2 (20 / 8): 2 x 500 used, 1,000 lost
    assert mix.fragmentation(40_000, 20 * GI, [1000, 1000]) == 1000
    # memory for none: all 2,000 lost
    assert mix.fragmentation(40_000, 4 * GI, [1000, 1000]) == 2000


def test_a_lone_pod_is_graded_on_the_first_nodes_by_position_only() -> None:
    """The candidates are a first-fit window (`CANDIDATES` nodes by position), not the
    nodes tightest for the pod's shape: z, half of whose device is free, takes a
    500-milli pod without opening a whole node, so it wins whenever it is in the window;
    behind 128 fresh nodes it is not, and the first fresh node takes the pod."""
    held = pod("held", gpus=0, gpu_milli=500, node_name="z", gpu_devices=(0,))
    new = pod("new", gpus=0, gpu_milli=500)
    for fresh, where in ((CANDIDATES - 1, "z"), (CANDIDATES, "n000")):
        nodes = [node(f"n{i:03d}", gpus=2, cpu=32) for i in range(fresh)]
        nodes.append(node("z", gpus=2, cpu=32))
        assert placed(cycle(nodes, held, new)) == {"default/new": where}


def test_a_lone_pod_of_whole_gpus_is_graded_on_a_wider_window() -> None:
    """Behind 128 fresh nodes z, two of whose four GPUs are free, is outside a fraction's
    window but inside a 2-GPU pod's (`MULTI_GPU_CANDIDATES`), and inside a 1-GPU pod's
    while the workload shares devices (`ONE_GPU_CANDIDATES`: a 500-milli pod runs on x):
    those fill z without opening a whole node, a 500-milli pod opens the first fresh one.
    Without a shared device, or behind 256 fresh nodes, the 1-GPU pod opens one too."""
    held = pod("held", gpus=2, cpu=4, node_name="z", gpu_devices=(0, 1))
    shared = pod("shared", gpus=0, gpu_milli=500, cpu=4, node_name="x", gpu_devices=(0,))

    def nodes(fresh: int) -> list[NodeInfo]:
        found = [node(f"n{i:03d}", gpus=2, cpu=32) for i in range(fresh)]
        return [*found, node("z", gpus=4, cpu=32), node("x", gpus=1, cpu=32)]

    near, far = nodes(CANDIDATES), nodes(ONE_GPU_CANDIDATES)
    two, one = pod("two", gpus=2, cpu=4), pod("one", gpus=1, cpu=4)
    half = pod("half", gpus=0, gpu_milli=500, cpu=4)
    assert placed(cycle(near, held, shared, two)) == {"default/two": "z"}
    assert placed(cycle(near, held, two)) == {"default/two": "z"}
    assert placed(cycle(near, held, shared, one)) == {"default/one": "z"}
    assert placed(cycle(near, held, one)) == {"default/one": "n000"}
    assert placed(cycle(far, held, shared, one)) == {"default/one": "n000"}
    assert placed(cycle(far, held, shared, two)) == {"default/two": "z"}
    assert placed(cycle(near, held, shared, half)) == {"default/half": "n000"}
