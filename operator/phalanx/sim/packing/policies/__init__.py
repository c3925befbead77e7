"""The compared packing policies, each as its source describes it (see each module)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from phalanx.sim.packing.policies.bestfit import BestFit
from phalanx.sim.packing.policies.binpack import GangBinpack
from phalanx.sim.packing.policies.fgd import Fgd
from phalanx.sim.packing.policies.gpu_packing import GpuPacking
from phalanx.sim.packing.policies.phalanx import PhalanxCore
from phalanx.sim.packing.policy import PackingPolicy
from phalanx.sim.packing.trace import PackPod

PolicyFactory = Callable[[Sequence[PackPod]], PackingPolicy]
"""A policy made for one trace (FGD learns its typical pods from the trace's own pods)."""

POLICIES: dict[str, PolicyFactory] = {
    "phalanx": lambda _trace: PhalanxCore(),
    "bestfit": lambda _trace: BestFit(),
    "fgd": Fgd.from_trace,
    "gpu-packing": lambda _trace: GpuPacking(),
    "gang-binpack": lambda _trace: GangBinpack(),
}

__all__ = [
    "POLICIES",
    "BestFit",
    "Fgd",
    "GangBinpack",
    "GpuPacking",
    "PhalanxCore",
    "PolicyFactory",
]
