"""Trace files for `phalanx sim --trace`.

- `*.csv`: an Alibaba 2023 pod list (see `phalanx.sim.workloads.alibaba`).
- YAML with `jobs:`: an explicit list of jobs
  (`{name, arrival, duration, pods, gpusPerPod, gpuMilliPerPod, cpuMilliPerPod,
  memoryMiBPerPod, priority, queue, preemptionPolicy, gpuModels}`; `gpuMilliPerPod`
  (1..999, without `gpusPerPod`): each pod takes that part of one GPU;
  `preemptionPolicy: Never` keeps the job from evicting; `gpuModels`: allowed GPU models).
- YAML with `generator: synthetic` (or a benchmark workload whose `trace:` holds
  that): parameters of the seeded generator (`phalanx.sim.workloads.synthetic`).
- YAML with `generator: alibaba`: `pods:` (CSV path), `demand` (`--load` overrides it),
  `interval`, `wholeOnly` (drop the fractional pods).
A generated trace may add `priorities:` and `queues:` (`phalanx.sim.workloads.mix`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from phalanx.sim.model import JobSpec, SimCluster
from phalanx.sim.paths import resolve
from phalanx.sim.workloads import alibaba, mix, synthetic


class TraceError(ValueError):
    pass


def read_trace_spec(path: str | Path) -> Mapping[str, Any]:
    file = resolve(path)
    if file.suffix == ".csv":
        return {"generator": "alibaba", "pods": str(file)}
    if not file.is_file():
        raise TraceError(f"trace file {path} not found")
    data = yaml.safe_load(file.read_text())
    if not isinstance(data, Mapping):
        raise TraceError(f"{path}: a trace is a mapping")
    trace = data.get("trace", data)
    if not isinstance(trace, Mapping):
        raise TraceError(f"{path}: trace must be a mapping")
    return trace


def jobs_from_spec(
    spec: Mapping[str, Any], cluster: SimCluster, seed: int = 1, load: float | None = None
) -> list[JobSpec]:
    if "jobs" in spec and isinstance(spec["jobs"], list):
        return [_job(item) for item in spec["jobs"]]
    return mix.apply_mix(_generated(spec, cluster, seed, load), spec, seed)


def _generated(
    spec: Mapping[str, Any], cluster: SimCluster, seed: int, load: float | None
) -> list[JobSpec]:
    generator = spec.get("generator")
    if generator == "synthetic":
        workload = synthetic.SyntheticWorkload.from_dict(spec)
        if load is not None:
            workload = replace(workload, load=load)
        return synthetic.generate(workload, cluster, seed)
    if generator == "alibaba":
        pods = alibaba.read_pods(
            Path(spec.get("pods", alibaba.DEFAULT_PODS)), bool(spec.get("wholeOnly", False))
        )
        return alibaba.demand_jobs(
            pods,
            cluster.total_gpus,
            seed,
            demand=load if load is not None else float(spec.get("demand", 1.3)),
            interval=float(spec.get("interval", 1.0)),
        )
    raise TraceError(f"unknown trace: give jobs or generator synthetic|alibaba, not {generator!r}")


def load_jobs(
    path: str | Path, cluster: SimCluster, seed: int = 1, load: float | None = None
) -> list[JobSpec]:
    return jobs_from_spec(read_trace_spec(path), cluster, seed, load)


def _job(item: Mapping[str, Any]) -> JobSpec:
    try:
        return JobSpec(
            name=str(item["name"]),
            arrival=float(item["arrival"]),
            duration=float(item["duration"]),
            pods=int(item.get("pods", 1)),
            gpus_per_pod=int(item.get("gpusPerPod", 0 if "gpuMilliPerPod" in item else 1)),
            gpu_milli_per_pod=int(item.get("gpuMilliPerPod", 0)),
            gpu_models=_models(item.get("gpuModels", ())),
            cpu_milli_per_pod=int(item.get("cpuMilliPerPod", 1000)),
            memory_mib_per_pod=int(item.get("memoryMiBPerPod", 1024)),
            priority=int(item.get("priority", 0)),
            queue=str(item.get("queue", "default")),
            may_preempt=_may_preempt(item.get("preemptionPolicy", "PreemptLowerPriority")),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise TraceError(f"bad job {item!r}: {error}") from error


def _models(given: object) -> tuple[str, ...]:
    """A list of GPU models, or the trace's form "V100M16|V100M32"."""
    if isinstance(given, str):
        return tuple(m for m in given.split("|") if m)
    if not isinstance(given, list | tuple):
        raise TraceError(f"gpuModels is a list of GPU models, not {given!r}")
    return tuple(str(m) for m in given)


def _may_preempt(policy: object) -> bool:
    if policy not in ("PreemptLowerPriority", "Never"):
        raise TraceError(f"preemptionPolicy is PreemptLowerPriority or Never, not {policy!r}")
    return policy == "PreemptLowerPriority"
