"""Leader election over a coordination.k8s.io Lease: one replica schedules, the others wait."""

from phalanx.leader.elector import LeaderElector, LeaseApi
from phalanx.leader.record import Action, LeaseRecord, decide
from phalanx.leader.replica import DEPOSED, STOPPED, run_replica
from phalanx.leader.thread import Campaign, ThreadedElector

__all__ = [
    "DEPOSED",
    "STOPPED",
    "Action",
    "Campaign",
    "LeaderElector",
    "LeaseApi",
    "LeaseRecord",
    "ThreadedElector",
    "decide",
    "run_replica",
]
