"""Room held for a group (status.nominated) is never given to a group of lower or equal
priority, on random clusters and workloads. (A hold may move within a cycle, to room
still free after earlier groups were placed; only nodes held all through the cycle
are checked.)"""

from __future__ import annotations

from core_builders import node, pod
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.core import (
    GroupInfo,
    NodeName,
    Nomination,
    PodInfo,
    PriorityClassInfo,
    Snapshot,
    run_cycle,
)

CLASSES = tuple(PriorityClassInfo(f"p{v}", v) for v in (0, 5, 10))


@st.composite
def worlds(draw: st.DrawFn) -> tuple[Snapshot, dict[str, int]]:
    nodes = [node(f"n{i}") for i in range(draw(st.integers(2, 5)))]
    pods: list[PodInfo] = []
    for n in nodes:
        used = draw(st.sampled_from((0, 2, 4, 8)))
        if used:
            pods.append(pod(f"busy-{n.name}", gpus=used, node_name=n.name,
                            priority=draw(st.sampled_from((0, 10))),
                            terminating=draw(st.booleans())))  # fmt: skip
    held = draw(st.lists(st.sampled_from([n.name for n in nodes]), min_size=1, unique=True))
    holder_level = draw(st.sampled_from((0, 5, 10)))
    nomination = Nomination(tuple(NodeName(n) for n in sorted(held)), "Preempting", 0.0, 100.0)
    size, gpus = draw(st.integers(1, 3)), draw(st.sampled_from((4, 8)))
    groups = [GroupInfo("default", "holder", size, priority_class_name=f"p{holder_level}",
                        nomination=nomination)]  # fmt: skip
    pods.extend(pod(f"holder-{i}", gpus=gpus, group="holder") for i in range(size))
    levels = {"default/holder": holder_level}
    for g in range(draw(st.integers(1, 6))):
        level = draw(st.sampled_from((0, 5, 10)))
        name = f"g{g}"
        groups.append(GroupInfo("default", name, 1, priority_class_name=f"p{level}",
                                creation=float(draw(st.integers(-5, 5)))))  # fmt: skip
        pods.append(pod(f"{name}-0", gpus=draw(st.sampled_from((1, 2, 4))), group=name))
        levels[f"default/{name}"] = level
    snapshot = Snapshot(nodes=nodes, pods=pods, groups=groups, priority_classes=CLASSES)
    return snapshot, levels


@settings(max_examples=200)
@given(worlds())
def test_held_nodes_go_to_no_group_of_lower_or_equal_priority(
    world: tuple[Snapshot, dict[str, int]],
) -> None:
    snapshot, levels = world
    result = run_cycle(snapshot, now=10.0)
    holder = result.decision("default/holder")
    assert holder is not None
    if holder.nomination is None:  # released (placed, or the hold led nowhere)
        return
    before = next(g for g in snapshot.groups if g.name == "holder").nomination
    assert before is not None
    held = set(holder.nomination.nodes) & set(before.nodes)  # held all through the cycle
    for binding in result.bindings:
        if binding.group != "default/holder" and binding.node in held:
            assert levels[binding.group] > levels["default/holder"], binding
