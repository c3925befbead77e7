"""Properties over random clusters, topologies and workloads."""

from __future__ import annotations

from dataclasses import dataclass

from core_builders import GPU, HOST, node, pod
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.core import (
    CycleResult,
    GroupInfo,
    GroupTopology,
    NodeInfo,
    PodInfo,
    QueueInfo,
    SchedulerConfig,
    Snapshot,
    TopologyLevel,
    TopologySpec,
    run_cycle,
)
from phalanx.core.model.inputs import Taint

LEVELS = ("block", "rack", "host")
SPEC = TopologySpec(
    "default",
    (
        TopologyLevel("block", ("block",)),
        TopologyLevel("rack", ("rack",)),
        TopologyLevel("host", (HOST,)),
    ),
)


@dataclass(frozen=True)
class World:
    nodes: tuple[NodeInfo, ...]
    pods: tuple[PodInfo, ...]
    groups: tuple[GroupInfo, ...]
    queues: tuple[QueueInfo, ...]

    def snapshot(self, order: list[int] | None = None) -> Snapshot:
        def arrange(items: tuple[object, ...]) -> tuple[object, ...]:
            if order is None:
                return items
            return tuple(items[i % len(items)] for i in _permute(order, len(items)))

        return Snapshot(
            nodes=arrange(self.nodes),  # type: ignore[arg-type]
            pods=arrange(self.pods),  # type: ignore[arg-type]
            groups=arrange(self.groups),  # type: ignore[arg-type]
            queues=arrange(self.queues),  # type: ignore[arg-type]
            topologies=(SPEC,),
        )


def _permute(order: list[int], size: int) -> list[int]:
    """A permutation of range(size) driven by the drawn integers."""
    keyed = sorted(range(size), key=lambda i: (order[i % len(order)] if order else 0, -i))
    return keyed


@st.composite
def worlds(draw: st.DrawFn) -> World:
    nodes: list[NodeInfo] = []
    for b in range(draw(st.integers(1, 2))):
        for r in range(draw(st.integers(1, 3))):
            for h in range(draw(st.integers(1, 3))):
                labels = {"block": f"b{b}"}
                if draw(st.integers(0, 9)) > 0:  # sometimes a node lacks its rack label
                    labels["rack"] = f"r{r}"
                taints = (
                    (Taint("dedicated", "x", "NoSchedule"),) if draw(st.integers(0, 9)) == 0 else ()
                )
                nodes.append(
                    node(
                        f"n{b}{r}{h}",
                        gpus=draw(st.sampled_from([2, 4, 8])),
                        cpu=draw(st.sampled_from([8, 32])),
                        labels=labels,
                        taints=taints,
                        unschedulable=draw(st.integers(0, 19)) == 0,
                    )
                )
    pods: list[PodInfo] = []
    for index, target in enumerate(nodes):
        busy = draw(st.integers(0, target.allocatable[GPU] // 1000))
        if busy:
            pods.append(
                pod(f"busy-{index}", gpus=busy, node_name=target.name, scheduler_name="other")
            )
    queues = (
        QueueInfo("team-a", capability={GPU: draw(st.sampled_from([4, 8, 16])) * 1000}),
        QueueInfo("team-b"),
    )
    groups: list[GroupInfo] = []
    for g in range(draw(st.integers(1, 6))):
        min_member = draw(st.integers(1, 4))
        size = min_member + draw(st.integers(0, 2))
        level = draw(st.sampled_from([None, *LEVELS]))
        mode = draw(st.sampled_from(["required", "preferred"]))
        spec = None if level is None else GroupTopology(**{mode: level})
        queue = draw(st.sampled_from(["team-a", "team-b", "default"]))
        groups.append(
            GroupInfo(
                "ml",
                f"g{g}",
                min_member,
                queue=queue,
                topology=spec,
                creation=float(draw(st.integers(0, 3))),
            )
        )
        gpus = draw(st.sampled_from([1, 2, 4, 8]))
        pods.extend(
            pod(f"g{g}-{i}", gpus=gpus, cpu=1, group=f"g{g}", namespace="ml") for i in range(size)
        )
    for s in range(draw(st.integers(0, 3))):
        pods.append(pod(f"single-{s}", gpus=draw(st.integers(0, 4)), namespace="ml"))
    return World(tuple(nodes), tuple(pods), tuple(groups), queues)


FAST = settings(max_examples=60)  # deterministic, no deadline: tests/conftest.py's profile
CONFIGS = st.sampled_from(
    [SchedulerConfig(), SchedulerConfig(node_order="spread"), SchedulerConfig(topology_aware=False)]
)


def usage_after(world: World, result: CycleResult) -> dict[str, dict[str, int]]:
    by_key = {p.key: p for p in world.pods}
    used: dict[str, dict[str, int]] = {n.name: {} for n in world.nodes}
    placed = [(p, p.node_name) for p in world.pods if p.node_name and not p.finished]
    placed += [(by_key[b.pod], b.node) for b in result.bindings]
    for p, name in placed:
        assert name is not None
        for resource, amount in p.requests.items():
            used[name][resource] = used[name].get(resource, 0) + amount
        used[name]["pods"] = used[name].get("pods", 0) + 1000
    return used


@FAST
@given(worlds(), CONFIGS)
def test_no_node_is_overcommitted(world: World, config: SchedulerConfig) -> None:
    result = run_cycle(world.snapshot(), config)
    used = usage_after(world, result)
    for n in world.nodes:
        for resource, amount in used[n.name].items():
            assert amount <= n.allocatable.get(resource, 0), (n.name, resource)
    bound_nodes = {b.node for b in result.bindings}
    assert all(n.ready and not n.unschedulable for n in world.nodes if n.name in bound_nodes)


@FAST
@given(worlds(), CONFIGS)
def test_groups_get_nothing_or_at_least_min_member(world: World, config: SchedulerConfig) -> None:
    result = run_cycle(world.snapshot(), config)
    for g in world.groups:
        new = sum(1 for b in result.bindings if b.group == g.key)
        assert new == 0 or new >= g.min_member, g.key
        decision = result.decision(g.key)
        assert decision is not None and decision.placed == new
        assert decision.scheduled == (new >= g.min_member)


def domain_path(n: NodeInfo, level: str) -> tuple[str, ...]:
    path: list[str] = []
    missing = False
    for name in LEVELS[: LEVELS.index(level) + 1]:
        key = HOST if name == "host" else name
        missing = missing or key not in n.labels
        path.append(f"<none:{n.name}>" if missing else n.labels[key])
    return tuple(path)


@FAST
@given(worlds())
def test_no_placement_exceeds_its_required_level(world: World) -> None:
    result = run_cycle(world.snapshot())
    by_name = {n.name: n for n in world.nodes}
    for g in world.groups:
        if g.topology is None or g.topology.required is None:
            continue
        level = g.topology.required
        domains = {domain_path(by_name[b.node], level) for b in result.bindings if b.group == g.key}
        assert len(domains) <= 1, (g.key, domains)


@FAST
@given(worlds(), CONFIGS)
def test_no_queue_exceeds_its_capability(world: World, config: SchedulerConfig) -> None:
    result = run_cycle(world.snapshot(), config)
    queue_of = {g.key: g.queue for g in world.groups}
    by_key = {p.key: p for p in world.pods}
    for q in world.queues:
        if q.capability is None:
            continue
        used: dict[str, int] = {}
        for b in result.bindings:
            if queue_of.get(b.group) == q.name:
                for resource, amount in by_key[b.pod].requests.items():
                    used[resource] = used.get(resource, 0) + amount
        for resource, cap in q.capability.items():
            assert used.get(resource, 0) <= cap


@FAST
@given(worlds(), CONFIGS, st.lists(st.integers(0, 1000), min_size=1, max_size=40))
def test_same_snapshot_same_decisions_in_any_input_order(
    world: World, config: SchedulerConfig, order: list[int]
) -> None:
    first = run_cycle(world.snapshot(), config)
    assert run_cycle(world.snapshot(), config) == first
    assert run_cycle(world.snapshot(order), config) == first


AMOUNTS = st.integers(-3_000, 70_000) | st.sampled_from((0, 1 << 35, -(1 << 40)))


@settings(FAST, max_examples=200)  # a pure function: cheap
@given(
    st.lists(st.tuples(AMOUNTS, AMOUNTS, AMOUNTS, st.integers(-(1 << 40), 110)), max_size=30),
    st.lists(st.integers(1, 40_000), min_size=1, max_size=3),
)
def test_fit_counts_of_columns_are_fit_count_on_every_node(
    nodes: list[tuple[int, int, int, int]], amounts: list[int]
) -> None:
    """The column form (one pass for two resources, a pass per resource otherwise)
    counts each node as `fit_count` does, held nodes (pods far below zero) and
    over-committed ones (negative free) included."""
    from phalanx.core.snapshot.shapes import fit_count, fit_counts_of_columns

    names = ("a", "b", "c")[: len(amounts)]
    requests = tuple(zip(names, amounts, strict=True))
    columns = [[free[i] for free in nodes] for i in range(len(names))]
    pods_free = [free[3] for free in nodes]
    expected = [
        fit_count(dict(zip(names, free, strict=False)), free[3], requests) for free in nodes
    ]
    assert fit_counts_of_columns(columns, pods_free, requests) == expected
