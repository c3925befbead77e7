"""Phalanx simulator: replays gang-job traces on a simulated cluster in virtual time.

The gang policies run the same core as the operator (`phalanx.core.run_cycle`);
see `phalanx.sim.engine` for the event loop, `phalanx.sim.slowdown` for the
topology slowdown model and `phalanx.sim.policies` for the compared policies.
"""

from phalanx.sim.engine import SimConfig, SimResult, simulate
from phalanx.sim.model import JobSpec, SimCluster, SimNode
from phalanx.sim.slowdown import SlowdownModel

__all__ = [
    "JobSpec",
    "SimCluster",
    "SimConfig",
    "SimNode",
    "SimResult",
    "SlowdownModel",
    "simulate",
]
