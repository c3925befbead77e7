"""The room a cluster would have if it were empty: pods of a shape each node and domain
could take with every node empty, ready and uncordoned. When even this is too small,
waiting will not help: explain says so, and preemption does not search."""

from __future__ import annotations

from phalanx.core.model.device_share import DEVICE
from phalanx.core.model.inputs import NodeInfo
from phalanx.core.model.status import Exclusion
from phalanx.core.placement.state import CycleState, roll_up
from phalanx.core.snapshot.devices import part_of
from phalanx.core.snapshot.shapes import Shape, fit_count, fit_counts_of_columns


def static_room(state: CycleState, shape: Shape, topology: str | None) -> list[int]:
    """Pods of `shape` each domain could take if every node were empty, ready and
    uncordoned: when even this is too small, waiting will not help."""
    cache = state.static_rooms
    key = (shape, topology)
    room = cache.get(key)
    if room is None:
        room = cache[key] = roll_up(state.tree(topology), static_counts(state, shape))
    return room


def static_counts(state: CycleState, shape: Shape) -> list[int]:
    """`static_room` per node (its sum is the whole cluster's); cached per shape, read
    column-wise from the nodes' allocatable."""
    cache = state.static_node_counts
    counts = cache.get(shape)
    if counts is None:
        index = state.index
        columns = [index.allocatable_column(name) for name, _ in shape.requests]
        fits = fit_counts_of_columns(columns, index.pods_allocatable, shape.requests)
        if shape.fractional:
            if shape.gpu_milli:  # the same part of a device on every node
                per = DEVICE // shape.gpu_milli if shape.gpu_milli <= DEVICE else 0
                takes = [gpus * per for gpus in index.gpu_counts]
            else:
                takes = [_devices_take(shape, node) for node in index.nodes]
            fits = list(map(min, fits, takes))
        static = state.static(shape.constraints)
        counts = [c if cause in _TRANSIENT else 0 for c, cause in zip(fits, static, strict=True)]
        cache[shape] = counts
    return counts


def static_takes(state: CycleState, shape: Shape, need: int) -> bool:
    """Is `static_room` at the root at least `need`? Nodes are counted in order only as
    far as needed (usually the first few), and where the count stopped is kept per
    shape, so a shape's nodes are counted at most once a cycle whatever is asked."""
    scan = state.static_scans.get(shape)
    if scan is None:
        scan = state.static_scans[shape] = [0, 0]
    position, total = scan
    index, static = state.index, state.static(shape.constraints)
    while total < need and position < len(static):
        if static[position] in _TRANSIENT:
            node = index.nodes[position]
            fit = fit_count(node.allocatable, index.pods_allocatable[position], shape.requests)
            if fit and shape.fractional:
                fit = min(fit, _devices_take(shape, node))
            total += fit
        position += 1
    scan[0], scan[1] = position, total
    return total >= need


_TRANSIENT = (None, Exclusion.NOT_READY, Exclusion.CORDONED)  # waiting may lift these


def _devices_take(shape: Shape, node: NodeInfo) -> int:
    """Pods of a fractional shape the node's devices take when all are free."""
    milli = part_of(shape.gpu_milli, shape.gpu_memory, node)
    return node.gpu_count * (DEVICE // milli) if 0 < milli <= DEVICE else 0
