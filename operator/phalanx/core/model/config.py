"""Knobs of the scheduling cycle; the defaults are what the operator runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from phalanx.core.model.names import DEFAULT_TOPOLOGY


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """`topology_aware=False` ignores every NetworkTopology (the gang-* baselines);
    `node_order` "binpack" fills busy nodes first, "spread" puts each pod on the
    least allocated node (kube-scheduler's LeastAllocated); `fragmentation_aware` puts a
    lone pod on the node where it leaves the least GPU unusable for the workload's typical
    pods (`phalanx.core.placement.node_choice`; off for the gang-* baselines).

    `preemption` lets a gang that cannot be placed, or that its queue's capability has
    no room for, evict lower-priority gangs of its queue, and a queue below its guarantee
    reclaim from queues above theirs; `nomination_timeout_seconds` is how long room freed
    for a preemptor stays held (a starvation reservation is renewed while only older work
    stands in its way);
    `starvation_seconds` is how long a gang may wait while groups of equal or lower
    priority are placed before room is reserved for it. A group past its
    scheduleTimeoutSeconds is retried after `backoff_initial_seconds`, doubling up to
    `backoff_max_seconds` (see backoff.py). `explain_preemption` adds to a waiting gang's
    message why eviction does not help it: a second victim search per gang shape, most of
    a busy cycle's time; the simulator, which shows no messages, turns it off.
    `partial_grace_seconds`: how long a gang left partly placed waits for the rest
    before it is released (at least; its scheduleTimeoutSeconds if longer: partial.py).
    `avoid_not_ready_level` names a topology level: while a node of one of its domains is
    NotReady, new gangs keep out of that domain (near_not_ready.py); None: off.
    `weigh_work_lost`: victims of equal priority are chosen by the work their eviction
    loses (since their last checkpoint, else their start: `preemption/units.py`); False
    chooses them by size alone (fewest GPUs, then pods, then the newest), as before that
    was weighed: the simulator's `phalanx-by-size` compares the two.
    `preemption_loss_factor`: a gang whose start is known from runtime limits evicts
    only if the GPU-hours it would wait until then are at least this many times the
    GPU-hours of work its victims lose; else it waits, with room reserved for that start
    (`preemption/cycle.py`). Limits overstate runtimes (2.6 times on average where users'
    accuracy is uniform on [0.1, 1], Mu'alem & Feitelson 2001), so the wait they give is
    longer than the real one, and the factor asks the eviction to save about what it
    loses in real time; 3 is what the simulator's priorities workload was measured with
    (`phalanx-evict-always` is the factor 0). 0: always evict. Reclaim for a queue below
    its guarantee is never held back.
    `backfill`: a group of lower priority may use room reserved for a waiting gang if its
    runtime limit ends by the reservation's start (`preemption/holds.py`); False keeps
    such room for the gang alone (the simulator's `phalanx-nobackfill`).
    `estimate_depth`: `run_cycle(..., estimate=True)` estimates the start of this many
    waiting gangs, in the order they are placed in (`timeline/estimate.py`); the rest
    are told they were not estimated. A bound against a runaway backlog, not a cost to
    save: 1,000 gangs on 4,000 nodes take about 0.2 s (`python -m bench.core`).
    `usage_half_life_seconds`: queues are ordered by their share of what runs now plus
    their past usage decayed with this half-life (`admission/usage.py`), unless a Queue
    sets its own; 0 (the default) keeps no history: the order is DRF on what runs now."""

    topology_aware: bool = True
    node_order: Literal["binpack", "spread"] = "binpack"
    fragmentation_aware: bool = True
    default_topology: str = DEFAULT_TOPOLOGY
    max_message_length: int = 1024
    preemption: bool = True
    nomination_timeout_seconds: float = 300.0
    starvation_seconds: float = 300.0
    explain_preemption: bool = True
    backoff_initial_seconds: float = 5.0
    backoff_max_seconds: float = 300.0
    avoid_not_ready_level: str | None = None
    partial_grace_seconds: float = 60.0
    weigh_work_lost: bool = True
    preemption_loss_factor: float = 3.0
    backfill: bool = True
    estimate_depth: int = 5000
    usage_half_life_seconds: float = 0.0
