"""Wait messages kept from one placement to the next (`explain.node_histogram`): the
sentence brought up to date from the changed nodes must be the one counted afresh."""

from __future__ import annotations

from core_builders import node, pod, snapshot_of

from phalanx.core.explain.unplaced import node_histogram
from phalanx.core.model.inputs import PodInfo
from phalanx.core.placement.state import CycleState
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.snapshot.shapes import Shape, shape_of

NODES = [node("a", gpus=2, cpu=8), node("b", gpus=4, cpu=4, pods=3), node("c", gpus=8),
         node("d", gpus=0, cpu=16), node("e", gpus=2, cpu=8, unschedulable=True)]  # fmt: skip
RUNNING = [pod("r0", gpus=0, gpu_milli=600, cpu=1, node_name="a", gpu_devices=(0,)),
           pod("r1", gpus=1, cpu=2, node_name="b", gpu_devices=(0,))]  # fmt: skip
ASKED = [pod("w1", gpus=1, cpu=2), pod("w2", gpus=2, cpu=6), pod("w3", gpus=0, cpu=8),
         pod("f5", gpus=0, gpu_milli=500, cpu=1),
         pod("f3", gpus=0, gpu_milli=300, cpu=1)]  # fmt: skip
STEPS: list[tuple[str, str, PodInfo | None]] = [
    ("place", "c", pod("p0", gpus=4, cpu=60)),
    ("place", "a", pod("p1", gpus=0, gpu_milli=300, cpu=1)),
    ("hold", "b", None),
    ("place", "c", pod("p2", gpus=3, cpu=2)),
    ("lift", "b", None),
    ("place", "b", pod("p3", gpus=1, cpu=1)),
    ("place", "a", pod("p4", gpus=1, cpu=1)),
    ("unplace", "c", None),
    ("place", "b", pod("p5", gpus=1, cpu=1)),
]


Step = tuple[str, int, PodInfo | None]


def _step(state: CycleState, placed: list[tuple[int, PodInfo]], step: Step) -> None:
    """Place a pod, take the first placed one off again, or hold / lift a node."""
    action, where, placed_pod = step
    if action == "place" and placed_pod is not None:
        state.place(where, placed_pod)
        placed.append((where, placed_pod))
    elif action == "unplace":
        state.unplace(*placed.pop(0))
    else:
        state.hold(where, 1 if action == "hold" else -1)


def _afresh(index: ClusterIndex, done: list[Step], shape: Shape) -> str:
    state, placed = CycleState(index), list[tuple[int, PodInfo]]()
    for step in done:
        _step(state, placed, step)
    return node_histogram(state, shape)


def test_a_kept_node_histogram_equals_one_counted_afresh() -> None:
    """Whole-GPU, CPU-only and fractional shapes, asked after every step: placements
    (whole GPUs and parts of one), a node held and lifted, a pod taken off again."""
    index = ClusterIndex(snapshot_of([*NODES, *RUNNING]))
    shapes = [shape_of(asked) for asked in ASKED]
    kept, placed = CycleState(index), list[tuple[int, PodInfo]]()
    done: list[Step] = []
    for shape in shapes:
        node_histogram(kept, shape)
    for action, name, placed_pod in STEPS:
        step = (action, index.node_position[name], placed_pod)
        _step(kept, placed, step)
        done.append(step)
        for shape in shapes:
            assert node_histogram(kept, shape) == _afresh(index, done, shape), (action, shape)
