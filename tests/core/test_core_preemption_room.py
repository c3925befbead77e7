"""The preemption search's room counts GPUs per device, as the placement does.

On seed 1 of the Alibaba simulation (cycles 28-29) 34-36 reservation searches a cycle
walked ~1,300 units to a victim set the real placement then refused: the room added
parts of different GPUs as if they were one (node 333: 220 + 230 milli freed on one
GPU, 230 + 230 on another, counted as a whole GPU) and gave a fractional pod room on a
node whose GPUs were full once a CPU-only pod went (node 641). Each test builds such a
node, walks the units as `choose` does (`take_until_fits`) and checks what the walk
says against `place_gang` with the walk's victims gone.
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import node, pod, snapshot_of

from phalanx.core import PodInfo
from phalanx.core.placement.gang import GangRequest, place_gang
from phalanx.core.placement.state import CycleState
from phalanx.core.preemption.room import DomainRoom
from phalanx.core.preemption.units import Unit, build_units
from phalanx.core.snapshot.shapes import demand_of, shape_of
from phalanx.topology.tree import ROOT, ROOT_LEVEL


def share(name: str, milli: int, device: int) -> PodInfo:
    """A running fractional pod on device `device` of node n."""
    return pod(name, gpus=0, gpu_milli=milli, node_name="n", gpu_devices=(device,))


def walk(running: list[PodInfo], walls: set[str], waiting: PodInfo) -> tuple[bool, bool]:
    """On one 2-GPU node running `running` (the `walls` may not be evicted): does the
    walk find room for `waiting` by evicting the others, and does the placement with
    the walk's victims (all the others when it finds none) gone agree?"""
    refused = frozenset(f"default/{name}" for name in walls)
    snapshot = snapshot_of([node("n", gpus=2, cpu=8), *running])
    index = replace(snapshot, eviction_refused=refused).index
    state = CycleState(index)
    units = build_units(index, {}, 0.0)
    shapes = (shape_of(waiting),)
    demand = demand_of(shapes)
    room = DomainRoom(state, demand, None, ROOT, None)
    assert not room.fits()
    chosen = room.take_until_fits(units, lambda _: True)
    victims: list[Unit] = list(units) if chosen is None else chosen
    freed = [(p, n) for unit in victims for p, n in zip(unit.pods, unit.nodes, strict=True)]
    for victim, position in freed:
        state.unplace(position, victim)
    request = GangRequest((waiting,), shapes, demand, None, ROOT_LEVEL)
    return chosen is not None, place_gang(state, request) is not None


def test_parts_of_two_gpus_freed_are_no_whole_gpu() -> None:
    """Node 333: each GPU keeps a refused 500; 220 + 230 freed on one, 230 + 230 on the
    other. The old estimate (a part plus what was free on its GPU, per victim: 270 +
    280 + 270 + 270) counted a whole GPU."""
    running = [share("wall-0", 500, 0), share("a", 220, 0), share("b", 230, 0)]
    running += [share("wall-1", 500, 1), share("c", 230, 1), share("d", 230, 1)]
    found, placed = walk(running, {"wall-0", "wall-1"}, pod("whole", gpus=1))
    assert (found, placed) == (False, False)


def test_a_gpu_whose_sharers_all_go_is_whole() -> None:
    """GPU 0's two sharers both go: a whole device, and the placement takes it."""
    running = [share("a", 500, 0), share("b", 500, 0), pod("wall", gpus=1, node_name="n")]
    found, placed = walk(running, {"wall"}, pod("whole", gpus=1))
    assert (found, placed) == (True, True)


def test_freed_cpu_gives_no_room_on_full_gpus() -> None:
    """Node 641: both GPUs held by refused pods that leave no CPU; a CPU-only pod going
    frees CPU, not a part of a GPU."""
    running = [pod("wall-0", gpus=1, cpu=3, node_name="n"), share("wall-1", 900, 1)]
    running.append(pod("cpu-only", gpus=0, cpu=5, node_name="n"))
    waiting = pod("part", gpus=0, gpu_milli=200)
    found, placed = walk(running, {"wall-0", "wall-1"}, waiting)
    assert (found, placed) == (False, False)


def test_a_freed_part_makes_room_for_a_smaller_part() -> None:
    """A fractional pod needs one device with its part free: 300 freed beside 600. The
    old estimate stopped at the CPU-only pod (the cheapest unit), which frees no part."""
    running = [pod("wall-0", gpus=1, cpu=3, node_name="n"), share("wall-1", 600, 1)]
    running += [share("a", 300, 1), pod("cpu-only", gpus=0, cpu=4, node_name="n")]
    found, placed = walk(running, {"wall-0", "wall-1"}, pod("part", gpus=0, gpu_milli=300))
    assert (found, placed) == (True, True)
