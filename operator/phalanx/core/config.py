"""Knobs of the scheduling cycle; the defaults are what the operator runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from phalanx.core.ids import DEFAULT_TOPOLOGY


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """`topology_aware=False` ignores every NetworkTopology (the gang-* baselines);
    `node_order` "binpack" fills busy nodes first, "spread" puts each pod on the
    least allocated node (kube-scheduler's LeastAllocated)."""

    topology_aware: bool = True
    node_order: Literal["binpack", "spread"] = "binpack"
    default_topology: str = DEFAULT_TOPOLOGY
    max_message_length: int = 1024
