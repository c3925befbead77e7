"""Scheduling policies compared by the simulator.

- `phalanx`: the core as shipped (topology-aware, bin-packing).
- `gang-spread`: the core with topology off and spreading node order
  (all-or-nothing gangs placed like kube-scheduler would spread them).
- `gang-binpack`: the core with topology off and bin-packing node order
  (Volcano's `gang` plugin plus its `binpack` plugin).
- `phalanx-by-size`: the core as shipped, but victims chosen by size (fewest GPUs)
  rather than by the work they lose (`SchedulerConfig.weigh_work_lost`).
- `phalanx-nobackfill`: the core as shipped, but room reserved for a waiting gang is
  kept for it alone (`SchedulerConfig.backfill` off).
- `phalanx-evict-always`: `phalanx` with `preemption_loss_factor=0`: a gang evicts
  whenever that makes it fit, however much work its victims lose against how long it
  would wait (the rule before the factor).
- `phalanx-dra`: the core as shipped, with every GPU published as a DRA device and every
  pod's GPUs asked through a ResourceClaim (`phalanx.sim.dra`).
- `kube-default`: kube-scheduler's default profile, pod by pod (`kube_default`),
  with its DefaultPreemption (`kube_preemption`).
- `kueue-like`: Kueue's ClusterQueues in one cohort (nominal quota, borrowing, Classic
  Preemption) with Topology Aware Scheduling, whole workloads (`kueue_like`,
  `kueue_preemption`): a queue-aware baseline that is not the core.

The three gang policies call `phalanx.core.run_cycle`; kube-default and kueue-like live
in the simulator, because they model other schedulers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from phalanx.sim.clock import WallTimer, default_wall_timer
from phalanx.sim.model import SimCluster, SimQueue
from phalanx.sim.policy import Policy

POLICIES = (
    "phalanx",
    "kube-default",
    "kueue-like",
    "gang-spread",
    "gang-binpack",
    "phalanx-by-size",
    "phalanx-nobackfill",
    "phalanx-evict-always",
)
"""The policies compared on every workload; `phalanx-dra` (whole GPUs only) is run where
asked for (`python -m bench.dra --sim`)."""
CORE_POLICIES: dict[str, tuple[bool, Literal["binpack", "spread"]]] = {
    "phalanx": (True, "binpack"),
    "phalanx-by-size": (True, "binpack"),
    "phalanx-nobackfill": (True, "binpack"),
    "phalanx-evict-always": (True, "binpack"),
    "phalanx-dra": (True, "binpack"),
    "gang-spread": (False, "spread"),
    "gang-binpack": (False, "binpack"),
}


def make_policy(
    name: str,
    cluster: SimCluster,
    wall: WallTimer = default_wall_timer,
    queues: Sequence[SimQueue] = (),
) -> Policy:
    """`queues` are the cluster's queues; kube-default has none (kube-scheduler knows
    priorities only), the gang policies and kueue-like admit, preempt and reclaim by them."""
    if name == "kube-default":
        from phalanx.sim.policies.kube_default import KubeDefaultPolicy

        return KubeDefaultPolicy(cluster, wall)
    if name == "kueue-like":
        from phalanx.sim.policies.kueue_like import KueueLikePolicy

        return KueueLikePolicy(cluster, wall, queues)
    if name in CORE_POLICIES:
        from phalanx.sim.policies.core_policy import CorePolicy

        topology_aware, node_order = CORE_POLICIES[name]
        return CorePolicy(name, cluster, topology_aware, node_order, wall, queues)
    raise ValueError(f"unknown policy {name!r}; one of {', '.join(POLICIES)}")
