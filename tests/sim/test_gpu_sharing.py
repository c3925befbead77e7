"""Fractional pods in the event simulator: they share a GPU device under every policy,
whole-GPU pods take only devices nothing holds, and allocation counts GPU milli."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.sim.engine import SimConfig, SimResult, simulate
from phalanx.sim.jobrun import JobRun
from phalanx.sim.metrics import summarise
from phalanx.sim.model import JobSpec, SimCluster
from phalanx.sim.policies import POLICIES, make_policy
from phalanx.sim.policy import SchedulingView
from phalanx.sim.state import ClusterState, room_for

from .conftest import make_cluster, node_object


def part(name: str, arrival: float, milli: int, duration: float = 1e6) -> JobSpec:
    return JobSpec(name, arrival, duration, pods=1, gpus_per_pod=0, gpu_milli_per_pod=milli,
                   cpu_milli_per_pod=1000, memory_mib_per_pod=1024)


def whole(name: str, arrival: float, gpus: int, duration: float = 1e6) -> JobSpec:
    return JobSpec(name, arrival, duration, pods=1, gpus_per_pod=gpus,
                   cpu_milli_per_pod=1000, memory_mib_per_pod=1024)


def _two_gpus() -> SimCluster:
    from phalanx.sim.cluster import cluster_from_objects

    return cluster_from_objects("two", [node_object("n0", gpus=2)])


def _run(policy: str, cluster: SimCluster, jobs: list[JobSpec], horizon: float = 100) -> SimResult:
    config = SimConfig(horizon=horizon, check_invariants=True)
    return simulate(cluster, jobs, make_policy(policy, cluster), config)


@pytest.mark.parametrize("policy", POLICIES)
def test_fractions_share_devices_and_allocation_counts_their_milli(policy: str) -> None:
    cluster = _two_gpus()
    jobs = [part(f"p{i}", i, 500) for i in range(4)] + [part("late", 10, 300)]
    result = _run(policy, cluster, jobs)
    runs = {r.name: r for r in result.runs}
    assert all(runs[f"p{i}"].start is not None for i in range(4))
    assert runs["late"].start is None  # both devices are full
    held = sorted(d for i in range(4) for d in runs[f"p{i}"].devices)
    assert held == [(0,), (0,), (1,), (1,)]
    assert summarise(result)["final_gpu_allocation"] == 1.0


@pytest.mark.parametrize("policy", POLICIES)
def test_a_whole_gpu_pod_never_takes_a_device_a_fraction_holds(policy: str) -> None:
    cluster = _two_gpus()
    result = _run(policy, cluster, [part("small", 0, 100), whole("pair", 1, 2), whole("one", 2, 1)])
    runs = {r.name: r for r in result.runs}
    assert runs["pair"].start is None
    assert runs["one"].devices == [(1,)]
    assert result.samples[-1].allocated_gpus == pytest.approx(1.1)


@pytest.mark.parametrize("policy", POLICIES)
def test_fractions_and_whole_gpus_come_and_go_without_overfilling_a_device(policy: str) -> None:
    """Pods of every kind arrive and finish on 4 nodes of 8 GPUs; the engine checks every
    placement against its own per-device bookkeeping (the core's choice included) and
    the invariants (no device beyond 1000 milli, milli conserved) after every event."""
    cluster = make_cluster({"r0": ["n0", "n1"], "r1": ["n2", "n3"]})
    jobs = []
    for i in range(120):
        duration = 50.0 + (i * 37) % 200
        if i % 3:
            jobs.append(part(f"f{i}", float(i), 100 + (i * 173) % 800, duration))
        else:
            jobs.append(whole(f"w{i}", float(i), 1 + i % 4, duration))
    result = _run(policy, cluster, jobs, horizon=1e5)
    assert all(r.finish is not None for r in result.runs)


def test_first_fit_takes_the_lowest_device_with_room() -> None:
    assert room_for([600, 200, 0], 500) == (1,)
    assert room_for([600, 200, 0], 1000) == (2,)
    assert room_for([600, 200, 0], 2000) is None
    assert room_for([600, 200, 0], 0) == ()


def test_the_state_keeps_whole_free_devices_apart_from_partly_used_ones() -> None:
    state = ClusterState(_two_gpus())
    assert state.bind(0, 300, 0, 0) == (0,)
    assert (int(state.gpu_free[0]), int(state.part_free[0])) == (1, 1000)
    assert state.fits(0, 1000, 0, 0) and not state.fits(0, 2000, 0, 0)
    state.bind(0, 1000, 0, 0, devices=(1,))
    assert (int(state.gpu_free[0]), int(state.part_free[0])) == (0, 700)
    assert state.allocated_milli == 1300 and state.fully_free_gpu_nodes() == 0
    state.release(0, 300, 0, 0, (0,))
    assert (int(state.gpu_free[0]), state.allocated_milli) == (1, 1000)


def test_a_placement_on_a_device_without_room_is_refused() -> None:
    from phalanx.sim.state import CapacityError

    state = ClusterState(_two_gpus())
    state.bind(0, 700, 0, 0, devices=(1,))
    with pytest.raises(CapacityError):
        state.bind(0, 400, 0, 0, devices=(1,))
    with pytest.raises(CapacityError):
        state.bind(0, 1000, 0, 0, devices=(1,))


def test_the_core_sees_the_devices_bound_pods_hold() -> None:
    """A running fractional pod is handed to the core with its device, so the core's
    next choice is made on the engine's usage."""
    from phalanx.sim.policies.core_policy import CorePolicy

    cluster = _two_gpus()
    policy = CorePolicy("phalanx", cluster, True, "binpack")
    view = _new_beside_held(cluster)
    outcome = policy.schedule(view)
    assert [(p.job, p.devices) for p in outcome.placements] == [("new", (1,))]


def test_a_yaml_trace_asks_for_part_of_a_gpu_and_for_gpu_models(tmp_path: Path) -> None:
    from phalanx.sim.trace import TraceError, load_jobs

    trace = tmp_path / "trace.yaml"
    trace.write_text(
        "jobs:\n"
        "  - {name: a, arrival: 0, duration: 10, gpuMilliPerPod: 250, gpuModels: T4|A10}\n"
        "  - {name: b, arrival: 1, duration: 10, gpusPerPod: 2, gpuModels: [V100M16]}\n"
    )
    a, b = load_jobs(trace, _two_gpus())
    assert (a.gpus_per_pod, a.milli_per_pod, a.gpu_models) == (0, 250, ("T4", "A10"))
    assert (b.gpus_per_pod, b.milli_per_pod, b.gpu_models) == (2, 2000, ("V100M16",))
    trace.write_text("jobs:\n  - {name: c, arrival: 0, duration: 1, gpuMilliPerPod: 1500}\n")
    with pytest.raises(TraceError):
        load_jobs(trace, _two_gpus())


def test_kube_default_takes_the_first_device_with_room_and_the_core_the_fullest() -> None:
    """The kube-default model allocates like the DRA allocator (first device by index that
    has room); the core fits a fraction onto the device it fills best."""
    cluster = _two_gpus()
    chosen = {}
    for policy in ("kube-default", "phalanx"):
        view = _new_beside_held(cluster)
        outcome = make_policy(policy, cluster).schedule(view)
        chosen[policy] = [p.devices for p in outcome.placements]
    assert chosen == {"kube-default": [(0,)], "phalanx": [(1,)]}


def _new_beside_held(cluster: SimCluster) -> SchedulingView:
    """A view at t=1: a running 600-milli pod on device 1 of node 0, a new 300-milli pod
    waiting."""
    state = ClusterState(cluster)
    held = JobRun(part("held", 0, 600))
    held.devices.append(state.bind(0, 600, 1000, 1024, devices=(1,)))
    held.nodes.append(0)
    held.bound_at.append(0.0)
    held.start = 0.0
    return SchedulingView(1.0, cluster, state, [JobRun(part("new", 1, 300))], [held])
