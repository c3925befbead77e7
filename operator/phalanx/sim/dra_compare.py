"""The same workload under `phalanx` and `phalanx-dra`: how many jobs started at the same
moment on the same nodes. Shared by the test that holds the DRA path to the extended
resource's decisions and by `python -m bench.dra --sim`."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from phalanx.sim.engine import SimConfig, simulate
from phalanx.sim.model import SimCluster
from phalanx.sim.policies import make_policy
from phalanx.sim.slowdown import SlowdownModel
from phalanx.sim.trace import jobs_from_spec


@dataclass(frozen=True, slots=True)
class Compared:
    runs: int
    same: int  # runs (job, attempt) that started at the same moment on the same nodes
    first_difference: str
    seconds: Mapping[str, float]  # wall time of each policy's simulation


def compare(cluster: SimCluster, trace: Mapping[str, Any], seed: int, load: float) -> Compared:
    jobs = jobs_from_spec(dict(trace), cluster, seed=seed, load=load)
    config = SimConfig(
        horizon=max(j.arrival for j in jobs) * 2 + 1, cycle_period=0, slowdown=SlowdownModel.off()
    )
    starts: dict[str, dict[tuple[str, int], tuple[float | None, tuple[int, ...]]]] = {}
    seconds: dict[str, float] = {}
    for name in ("phalanx", "phalanx-dra"):
        began = time.perf_counter()
        result = simulate(cluster, jobs, make_policy(name, cluster), config)
        seconds[name] = time.perf_counter() - began
        starts[name] = {(r.name, r.attempt): (r.start, tuple(r.nodes)) for r in result.runs}
    plain, dra = starts["phalanx"], starts["phalanx-dra"]
    differ = [k for k in sorted(plain.keys() | dra.keys()) if plain.get(k) != dra.get(k)]
    first = f"{differ[0]}: {plain.get(differ[0])} / {dra.get(differ[0])}" if differ else ""
    return Compared(len(plain), len(plain) - len(differ), first, seconds)
