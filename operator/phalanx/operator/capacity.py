"""What the cluster holds once a cycle's pods are bound: the figures behind the GPU gauges,
the Queues' and the NetworkTopologies' status, computed apart from writing them.

Pure (a snapshot in, figures out), so the operator computes them in a worker thread while
its event loop sends the cycle's bindings: at bench-5000 this was a third of the first
cycle's CPU (the capacity after 20,870 bindings: the snapshot's index built again), and
on the loop it held every binding reply back for that long.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from phalanx.core.model.names import GPU
from phalanx.core.model.result import Binding
from phalanx.core.snapshot.picture import Snapshot, with_bindings
from phalanx.observe.gpu_usage import GpuUsage, gpu_usage
from phalanx.operator.topology_status import allocated_amounts, formatted, topology_status
from phalanx.topology.gaps import LevelGap, level_gaps


@dataclass(frozen=True)
class TopologyFigures:
    """A NetworkTopology's status tree, and the levels some GPU nodes carry no label of."""

    status: dict[str, Any]
    gaps: tuple[LevelGap, ...]


@dataclass(frozen=True)
class Capacity:
    usage: GpuUsage
    allocated: Mapping[str, Mapping[str, str]]  # queue -> resource -> amount, as written
    topologies: Mapping[str, TopologyFigures]  # NetworkTopology name -> its figures
    amounts: Mapping[str, Mapping[str, int]]  # queue -> resource -> milli-units


def capacity_after(
    snapshot: Snapshot, bindings: Sequence[Binding], topologies: Iterable[str]
) -> Capacity:
    """The capacity once `bindings` land, for the NetworkTopologies named (those the
    snapshot does not know are left out)."""
    after = with_bindings(snapshot, bindings)
    index = after.index
    gpu_labels = [n.labels for n in index.nodes if n.allocatable.get(GPU, 0) > 0]
    figures: dict[str, TopologyFigures] = {}
    for name in topologies:
        status = topology_status(after, name)
        if status is not None:
            figures[name] = TopologyFigures(
                status, level_gaps(index.topologies[name], gpu_labels))
    amounts = allocated_amounts(after)
    return Capacity(gpu_usage(after), formatted(amounts), figures, amounts)
