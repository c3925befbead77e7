"""Leader election over a coordination.k8s.io Lease: one replica schedules, the others wait."""

from phalanx.leader.elector import LeaderElector, LeaseApi
from phalanx.leader.record import Action, LeaseRecord, decide

__all__ = ["Action", "LeaderElector", "LeaseApi", "LeaseRecord", "decide"]
