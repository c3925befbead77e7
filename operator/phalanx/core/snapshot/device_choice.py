"""Which GPU device(s) of a node a pod takes: the one scoring function to replace.

The node is chosen elsewhere (placement/gang.py, by room for the pod's shape); this module
only picks devices inside it. `score_device` is the policy: the simulator's
fragmentation-aware scoring replaces it, nothing else here. The default is best fit
(the device left with the least room after the pod), so fractions pile onto devices
already in use and whole devices stay whole for whole-GPU pods; ties go to the lower
index, which makes the choice a function of the usage alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from phalanx.core.model.device_share import DEVICE


def score_device(used: Sequence[int], index: int, milli: int) -> float:
    """Lower is better. `used`: milli taken on each device of the node before the pod;
    `index`: a device with room (`used[index] + milli <= DEVICE`); `milli`: what the pod
    takes of it (DEVICE for each device of a whole-GPU pod)."""
    return DEVICE - used[index] - milli


def choose_devices(used: Sequence[int], milli: int, count: int) -> tuple[int, ...] | None:
    """`count` devices each with `milli` free (a fractional pod: count 1; a whole-GPU pod:
    milli DEVICE), the best scored first, in index order; None when they do not fit."""
    if count == 1:
        best: tuple[float, int] | None = None
        for index, taken in enumerate(used):
            if taken + milli <= DEVICE:
                scored = (score_device(used, index, milli), index)
                if best is None or scored < best:
                    best = scored
        return (best[1],) if best is not None else None
    free = [index for index, taken in enumerate(used) if taken + milli <= DEVICE]
    if len(free) < count:
        return None
    if len(free) > count:
        free.sort(key=lambda index: (score_device(used, index, milli), index))
        free = sorted(free[:count])
    return tuple(free)
