"""Properties of GPU sharing over random clusters and arrivals: no device holds more
than one GPU, no whole-GPU pod shares a device with a fraction, and the same state
always gives the same devices (whatever order the snapshot lists things in)."""

from __future__ import annotations

from dataclasses import replace

from core_builders import group, node, pod
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.core import GroupInfo, NodeInfo, PodInfo, Snapshot, run_cycle
from phalanx.core.model.names import GPU, GPU_MEMORY_LABEL
from phalanx.core.snapshot.devices import device_usage, overcommitted, pod_shares, take
from phalanx.core.snapshot.picture import with_bindings

MILLI = st.sampled_from((100, 200, 250, 300, 500, 700, 900))
ASK = st.one_of(
    st.tuples(st.just("milli"), MILLI),
    st.tuples(st.just("whole"), st.integers(1, 3)),
    st.tuples(st.just("memory"), st.sampled_from((10000, 20000, 40000))),
)
ROUND = st.lists(st.tuples(ASK, st.integers(0, 2)), min_size=1, max_size=8)


def nodes_of(gpus: list[int]) -> list[NodeInfo]:
    labels = {GPU_MEMORY_LABEL: "80000"}
    return [node(f"n{i}", gpus=g, labels=labels if i % 2 else {}) for i, g in enumerate(gpus)]


def arrivals(round_no: int, asks: list[tuple[tuple[str, int], int]]) -> list[object]:
    """Pods of the round; those drawn with gang number g > 0 form one gang per g."""
    found: list[object] = []
    gangs: dict[int, int] = {}
    for i, ((kind, amount), gang) in enumerate(asks):
        name = f"r{round_no}-p{i}"
        group_name = f"r{round_no}-g{gang}" if gang else None
        if kind == "whole":
            found.append(pod(name, gpus=amount, group=group_name))
        elif kind == "milli":
            found.append(pod(name, gpus=0, gpu_milli=amount, group=group_name))
        else:
            found.append(pod(name, gpus=0, gpu_memory=amount, group=group_name))
        if gang:
            gangs[gang] = gangs.get(gang, 0) + 1
    found.extend(group(f"r{round_no}-g{g}", size) for g, size in gangs.items())
    return found


def snapshot(nodes: list[NodeInfo], pods: list[PodInfo], groups: list[GroupInfo]) -> Snapshot:
    return Snapshot(nodes=tuple(nodes), pods=tuple(pods), groups=tuple(groups))


def check_devices(nodes: list[NodeInfo], pods: list[PodInfo]) -> None:
    for info in nodes:
        here = [p for p in pods if p.node_name == info.name and not p.finished]
        usage = device_usage(info, here)
        assert all(used <= 1000 for used in usage.used), usage
        whole = {s.index for p in here if GPU in p.requests for s in usage.shares[p.key]}
        shared = {s.index for p in here if p.fractional for s in usage.shares[p.key]}
        assert not whole & shared
        for p in here:
            if p.fractional or GPU in p.requests:
                assert tuple(s.index for s in usage.shares[p.key]) == tuple(
                    sorted(p.gpu_devices)
                ), "the devices written on the pod are the ones it holds"


@settings(max_examples=60)
@given(
    gpus=st.lists(st.integers(0, 4), min_size=1, max_size=4),
    rounds=st.lists(ROUND, min_size=1, max_size=4),
    finish=st.lists(st.booleans(), max_size=40),
)
def test_devices_never_overfill_and_whole_pods_never_share(
    gpus: list[int], rounds: list[list[tuple[tuple[str, int], int]]], finish: list[bool]
) -> None:
    nodes = nodes_of(gpus)
    pods: list[PodInfo] = []
    groups: list[GroupInfo] = []
    for round_no, asks in enumerate(rounds):
        for item in arrivals(round_no, asks):
            (groups if isinstance(item, GroupInfo) else pods).append(item)  # type: ignore[arg-type]
        before = snapshot(nodes, pods, groups)
        result = run_cycle(before)
        reversed_order = Snapshot(
            nodes=tuple(reversed(nodes)), pods=tuple(reversed(pods)), groups=tuple(groups)
        )
        assert run_cycle(reversed_order).bindings == result.bindings
        assert run_cycle(before).bindings == result.bindings
        for binding in result.bindings:
            assert (GPU in _pod(pods, binding.pod).requests or _pod(
                pods, binding.pod).fractional) == bool(binding.devices)
        after = with_bindings(before, result.bindings)
        pods = [
            replace(p, phase="Running") if p.node_name and p.phase == "Pending" else p
            for p in after.pods
        ]
        check_devices(nodes, pods)
        pods = [
            replace(p, phase="Succeeded") if p.node_name and i < len(finish) and finish[i] else p
            for i, p in enumerate(pods)
        ]


def _pod(pods: list[PodInfo], key: str) -> PodInfo:
    return next(p for p in pods if p.key == key)


@settings(max_examples=150)
@given(st.integers(1, 8), st.lists(ASK, min_size=0, max_size=10))
def test_rebuilt_usage_is_the_pod_by_pod_choice(gpus: int, asks: list[tuple[str, int]]) -> None:
    """`device_usage` places leading whole-GPU pods in index order without scoring; the
    result must be exactly what choosing each pod's devices in turn gives, over-committed
    nodes included."""
    info = nodes_of([gpus, gpus])[1]
    here = [replace(p, node_name=info.name) for p in arrivals(0, [(a, 0) for a in asks])
            if isinstance(p, PodInfo)]
    used = [0] * info.gpu_count
    expected = {}
    for p in sorted(here, key=lambda p: p.fractional):
        chosen = pod_shares(p, info, used)
        if chosen is None:
            chosen = overcommitted(p, info, used)
            take(used, chosen, 1)
        expected[p.key] = chosen
    usage = device_usage(info, here)
    assert usage.shares == expected and list(usage.used) == used
