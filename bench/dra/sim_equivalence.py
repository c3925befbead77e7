"""`phalanx` against `phalanx-dra` (the same GPUs as DRA devices and claims) on the
simulator's workloads: how many jobs start at the same moment on the same nodes, and what
the DRA path costs in simulated cycles' wall time. Writes bench/results/dra-sim.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from phalanx.sim.dra_compare import compare
from phalanx.sim.run import open_cluster

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "bench" / "results" / "dra-sim.json"
WORKLOADS = ("small-synthetic", "priorities", "checkpoints", "lingjun-synthetic")
SEEDS = {"lingjun-synthetic": (1,)}  # 3,000 jobs on 847 nodes: one seed (minutes)
DEFAULT_SEEDS = (1, 2, 3)


def run() -> dict[str, Any]:
    rows = []
    for workload in WORKLOADS:
        spec = yaml.safe_load((ROOT / "bench" / "workloads" / f"{workload}.yaml").read_text())
        cluster = open_cluster(spec["cluster"])
        load = spec["loads"][len(spec["loads"]) // 2]
        for seed in SEEDS.get(workload, DEFAULT_SEEDS):
            compared = compare(cluster, spec["trace"], seed, float(load))
            rows.append({
                "workload": workload,
                "seed": seed,
                "load": load,
                "runs": compared.runs,
                "same_start_and_nodes": compared.same,
                "first_difference": compared.first_difference,
                "seconds": {k: round(v, 2) for k, v in compared.seconds.items()},
            })
            print(f"{workload:18} seed {seed}: {compared.same}/{compared.runs} the same, "
                  f"{compared.seconds['phalanx']:.1f} s / {compared.seconds['phalanx-dra']:.1f} s",
                  flush=True)
    document = {"workloads": rows}
    RESULT.write_text(json.dumps(document, indent=2) + "\n")
    return document
