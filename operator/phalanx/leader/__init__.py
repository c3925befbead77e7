"""Leader election over a coordination.k8s.io Lease: one replica schedules, the others wait."""

from phalanx.leader.elector import LeaderElector, LeaseApi
from phalanx.leader.record import Action, LeaseRecord, decide
from phalanx.leader.replica import DEPOSED, STOPPED, run_replica

__all__ = [
    "DEPOSED",
    "STOPPED",
    "Action",
    "LeaderElector",
    "LeaseApi",
    "LeaseRecord",
    "decide",
    "run_replica",
]
