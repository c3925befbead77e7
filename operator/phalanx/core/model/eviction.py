"""Evictions the core decides: which running pod must go, and for whom.

The shell carries them out (Eviction API); the core only names them, so `phalanx plan`,
the simulator and the operator evict the same pods for the same snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from phalanx.core.model.names import GroupKey, PodKey


class EvictionReason(StrEnum):
    """PREEMPTED: for a higher-priority group of the same queue; RECLAIMED: for a queue
    below its guarantee, from a queue above its own; RUNTIME_LIMIT: the group ran past
    its runtime limit (its preemptor is the group itself)."""

    PREEMPTED = "Preempted"
    RECLAIMED = "Reclaimed"
    RUNTIME_LIMIT = "RuntimeLimitExceeded"


@dataclass(frozen=True, slots=True)
class Eviction:
    """One pod to evict. `group` is the victim's group (None for a lone pod);
    `message` is one sentence naming the preemptor and its priority or queue, and the
    work the victim loses; `work_lost_gpu_seconds`: that work, of the unit the pod goes
    with (its whole gang, or the pod alone), in GPU-seconds since its last checkpoint,
    else since it started."""

    pod: PodKey
    group: GroupKey | None
    reason: EvictionReason
    preemptor: GroupKey
    message: str
    work_lost_gpu_seconds: float = 0.0
