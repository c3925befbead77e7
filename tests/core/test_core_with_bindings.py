"""A snapshot with a cycle's bindings applied equals one taken after they land."""

from __future__ import annotations

from dataclasses import replace

from core_builders import GPU, gang, node, snapshot_of

from phalanx.core import run_cycle
from phalanx.core.snapshot.picture import with_bindings


def test_bindings_applied_match_a_snapshot_taken_after_they_land() -> None:
    nodes = [node("n1", gpus=8), node("n2", gpus=8)]
    a_group, a_pods = gang("a", 2, gpus=4)
    b_group, b_pods = gang("b", 2, gpus=8)  # does not fit next to `a`
    before = snapshot_of([*nodes, a_group, *a_pods, b_group, *b_pods])
    result = run_cycle(before)
    assert {b.group for b in result.bindings} == {"default/a"}

    after = with_bindings(before, result.bindings)
    landed = {str(b.pod): str(b.node) for b in result.bindings}
    expected = snapshot_of([*nodes, a_group, b_group, *b_pods,
                            *(replace(p, node_name=landed[p.key]) for p in a_pods)])
    assert after.index.free == expected.index.free
    assert sum(free[GPU] for free in after.index.free) == 8 * 1000
    assert {p.name: p.node_name for p in after.pods if p.group == "b"} == {
        "b-0": None, "b-1": None}
    assert before.pods == tuple(before.pods)  # the original is left as it was
    assert all(p.node_name is None for p in before.pods)


def test_no_bindings_is_the_same_snapshot() -> None:
    before = snapshot_of([node("n1")])
    assert with_bindings(before, ()) is before
