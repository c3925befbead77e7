"""The victim search counts whole GPUs freed in plain integers on nodes where each pod
holds whole devices of its own, and per device elsewhere; both must give the same room.

Random nodes run whole-GPU, fractional and CPU-only pods, some with their devices
written on them (overlapping, out of range), some nodes over-committed. One room is
made on a fresh state (such nodes counted whole), the other on a state that has listed
the devices of those nodes (counted per device, as before the plain count; the others
are left as they are in both, as a state lists them only when it needs to);
units (never two holding the same pod) are taken and given back at random, and both
rooms must agree on every node's room, the totals, what `fits_without` says and the
walk `take_until_fits` makes. Each property fails when the plain count is made wrong
(the over-commit, fraction or written-twice checks dropped, the slots off by one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from core_builders import node, pod, snapshot_of
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.core import NodeInfo, PodInfo
from phalanx.core.placement.state import CycleState
from phalanx.core.preemption.room import DomainRoom, KeptRoom
from phalanx.core.preemption.search import _prune
from phalanx.core.preemption.units import Unit, build_units
from phalanx.core.snapshot.devices import device_usage, owned_whole_free, whole_devices, whole_free
from phalanx.core.snapshot.shapes import demand_of, shape_of
from phalanx.topology.tree import ROOT

KIND = st.one_of(
    st.tuples(st.just("whole"), st.integers(1, 3)),
    st.tuples(st.just("milli"), st.sampled_from((250, 300, 500, 700))),
    st.tuples(st.just("cpu"), st.just(0)),
)
RUNNING = st.tuples(KIND, st.one_of(st.none(), st.integers(0, 3)), st.integers(0, 3))
NODE = st.tuples(st.integers(1, 4), st.lists(RUNNING, max_size=6))
WAITING = st.one_of(
    st.tuples(st.just("whole"), st.integers(1, 2)), st.tuples(st.just("milli"), st.just(300))
)
DEMAND = st.lists(st.tuples(WAITING, st.integers(1, 6)), min_size=1, max_size=2)


def running_pod(name: str, on: str, kind: tuple[str, int], written: int | None,
                gang: int) -> PodInfo:
    """`written`: the first device written on the pod (None: none written; the devices
    may pass the node's, or be another pod's too). Gang 0: a pod alone (a unit of its
    own); others: a group per number, across nodes."""
    group = f"g{gang}" if gang else None
    if kind[0] == "whole":
        devices = () if written is None else tuple(range(written, written + kind[1]))
        return pod(name, gpus=kind[1], node_name=on, group=group, gpu_devices=devices)
    if kind[0] == "milli":
        devices = () if written is None else (written,)
        return pod(name, gpus=0, gpu_milli=kind[1], node_name=on, group=group,
                   gpu_devices=devices)  # fmt: skip
    return pod(name, gpus=0, cpu=2, node_name=on, group=group)


def cluster(nodes: list[tuple[int, list[tuple[tuple[str, int], int | None, int]]]]
            ) -> tuple[list[NodeInfo], list[PodInfo]]:  # fmt: skip
    infos = [node(f"n{i}", gpus=gpus, cpu=64) for i, (gpus, _) in enumerate(nodes)]
    pods = [
        running_pod(f"n{i}-p{j}", f"n{i}", kind, written, gang)
        for i, (_, running) in enumerate(nodes)
        for j, (kind, written, gang) in enumerate(running)
    ]
    return infos, pods


def waiting_pods(demand: list[tuple[tuple[str, int], int]]) -> list[PodInfo]:
    return [
        pod(f"w{i}-{j}", gpus=amount if kind == "whole" else 0,
            gpu_milli=amount if kind == "milli" else 0)
        for i, ((kind, amount), count) in enumerate(demand)
        for j in range(count)
    ]  # fmt: skip


def rooms_of(
    nodes: list[NodeInfo], pods: list[PodInfo], waiting: list[PodInfo]
) -> tuple[DomainRoom, DomainRoom, tuple[Unit, ...]]:
    """A room on a fresh state and one on a state that listed the devices of the nodes
    where each pod holds whole devices of its own."""
    index = snapshot_of([*nodes, *pods]).index
    demand = demand_of([shape_of(p) for p in waiting])
    whole, listed = CycleState(index), CycleState(index)
    for position in range(len(nodes)):
        if index.owned_whole_free(position) is not None:
            listed.devices(position)
    units = build_units(index, {}, 0.0)
    return (
        DomainRoom(whole, demand, None, ROOT, None),
        DomainRoom(listed, demand, None, ROOT, None),
        units,
    )


def apart(units: Sequence[Unit]) -> bool:
    """No pod in two of the units (a group's whole unit and one of its elastic pods): a
    search never takes both (it walks one kind of unit at a time, and the victims of
    earlier searches are not offered again)."""
    keys = [p.key for unit in units for p in unit.pods]
    return len(set(keys)) == len(keys)


def same(a: DomainRoom, b: DomainRoom, taken: list[Unit]) -> None:
    assert a.totals == b.totals
    assert a.rooms == b.rooms
    for unit in taken:
        assert a.fits_without((unit,)) == b.fits_without((unit,))
    assert a.fits_without(taken) == b.fits_without(taken)


@settings(max_examples=200)
@given(
    st.lists(NODE, min_size=1, max_size=4),
    DEMAND,
    st.lists(st.tuples(st.integers(0, 40), st.booleans()), max_size=30),
)
def test_whole_counts_give_the_per_device_room(
    nodes: list[tuple[int, list[tuple[tuple[str, int], int | None, int]]]],
    demand: list[tuple[tuple[str, int], int]],
    steps: list[tuple[int, bool]],
) -> None:
    infos, pods = cluster(nodes)
    waiting = waiting_pods(demand)
    whole, listed, units = rooms_of(infos, pods, waiting)
    taken: list[Unit] = []
    for pick, take in steps:
        if not units:
            break
        unit = units[pick % len(units)]
        if take and unit not in taken and apart([*taken, unit]):
            taken.append(unit)
            whole.take_units((unit,))
            listed.take_units((unit,))
        elif not take and unit in taken:
            taken.remove(unit)
            whole.give_units((unit,))
            listed.give_units((unit,))
        same(whole, listed, taken)
    whole, listed, units = rooms_of(infos, pods, waiting)
    walks = [room.take_until_fits(units, apart) for room in (whole, listed)]
    assert walks[0] == walks[1]
    same(whole, listed, walks[0] or [])


@settings(max_examples=300)
@given(NODE)
def test_owned_whole_free_is_what_the_usage_says(
    spec: tuple[int, list[tuple[tuple[str, int], int | None, int]]],
) -> None:
    """Where it answers, every pod holds its whole GPUs on devices of its own and the
    count is the devices nothing holds; it answers on every node of whole-GPU pods only
    that asks no more GPUs than the node has and writes no device twice."""
    (info,), pods = cluster([spec])
    usage = device_usage(info, pods)
    free = owned_whole_free(info, pods)
    holders = [p for p in pods if p.fractional or whole_devices(p)]
    if free is not None:
        assert free == whole_free(usage.used)
        assert all(taken in (0, 1000) for taken in usage.used)
        for p in holders:
            assert [s.milli for s in usage.shares[p.key]] == [1000] * whole_devices(p)
        return
    written = [
        i for p in holders for i in p.gpu_devices if max(p.gpu_devices) < info.gpu_count
    ]  # fmt: skip
    assert (
        any(p.fractional for p in holders)
        or sum(map(whole_devices, holders)) > info.gpu_count
        or len(set(written)) < len(written)
    )


def pruned(
    room: DomainRoom, units: tuple[Unit, ...], order: list[int], eager: bool
) -> list[tuple[str, ...]] | None:
    """Walk the units in the order given and prune what the walk took: by `_prune`
    (the kept units' room filled when it could fit), or, `eager`, filling it with each
    unit kept, as pruning did before `KeptRoom`, asking a `KeptRoom` beside it the
    same each time."""
    ordered = [units[i] for i in order if i < len(units)]
    start, second = room.copy(), room.copy()
    chosen = room.take_until_fits(ordered, apart)
    if chosen is None:
        return None
    if not eager:
        return [tuple(p.name for p in unit.pods) for unit in _prune(room, start, chosen)]
    dropped: set[int] = set()
    kept = KeptRoom(second, room)
    for position in range(len(chosen) - 1, -1, -1):
        unit = chosen[position]
        if room.fits_without((unit,)):
            room.give_units((unit,))
            dropped.add(id(unit))
            continue
        start.take_units((unit,))
        assert kept.keep(unit) == start.fits()
        if start.fits():
            dropped.update(id(below) for below in chosen[:position])
            break
    return [tuple(p.name for p in unit.pods) for unit in chosen if id(unit) not in dropped]


@settings(max_examples=300)
@given(
    st.lists(NODE, min_size=1, max_size=5),
    DEMAND,
    st.permutations(range(30)),
    st.booleans(),
)
def test_pruning_fills_the_kept_room_lazily_with_the_same_answer(
    nodes: list[tuple[int, list[tuple[tuple[str, int], int | None, int]]]],
    demand: list[tuple[tuple[str, int], int]],
    order: list[int],
    listed: bool,
) -> None:
    """`KeptRoom` answers as a room filled with each kept unit does, on a fresh state
    and on one that listed the devices of the nodes counted whole: the same answer after
    each unit kept, the same units kept. Fails when the bound skips a fill it needs or
    answers without one where the ceiling holds other units."""
    infos, pods = cluster(nodes)
    waiting = waiting_pods(demand)
    lazy, eager = rooms_of(infos, pods, waiting), rooms_of(infos, pods, waiting)
    pick = 1 if listed else 0
    answer = pruned(lazy[pick], lazy[2], order, eager=False)
    assert answer == pruned(eager[pick], eager[2], order, eager=True)


def test_a_device_placed_on_this_cycle_is_counted_per_device() -> None:
    """A 2-GPU node running a whole-GPU pod on device 0, and a 500-milli pod placed on
    device 1 this cycle: with the running pod gone, four more 500-milli pods would fit
    by the snapshot's devices, three by the state's."""
    running = pod("running", gpus=1, node_name="n0", gpu_devices=(0,))
    waiting = [pod(f"w{i}", gpus=0, gpu_milli=500) for i in range(4)]
    snapshot_room, _, units = rooms_of([node("n0", gpus=2)], [running], waiting)
    state = snapshot_room.state
    state.place(0, replace(waiting[0], name="placed", node_name="n0"))
    room = DomainRoom(state, snapshot_room.demand, None, ROOT, None)
    room.take_units(units)
    assert room.totals == [3]
