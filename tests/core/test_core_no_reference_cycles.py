"""A cycle of the core makes no reference cycles: everything it makes is freed by
reference counting. The operator counts on it: no collection runs while a cycle decides
(`FrozenHeap.deciding`), and what is alive at its end is frozen, so cyclic garbage made
there would stay until the next thaw, minutes later."""

from __future__ import annotations

import gc

from core_builders import group, node, pod, snapshot_of, topology

from phalanx.core import run_cycle


def _cluster() -> list[object]:
    """Two racks of two 8-GPU nodes, all full: a gang past its limit (evicted), one
    that an urgent gang preempts, work with limits that a big gang's expected start and
    reservation wait for, a gang with a short limit; a third rack's free node that a
    small gang takes."""
    nodes = [node(f"n{r}{h}", labels={"rack": f"r{r}"}) for r in range(2) for h in range(2)]
    nodes.append(node("n20", labels={"rack": "r2"}))
    running = [
        (name, f"n{where}", limit, priority)
        for name, where, limit, priority in (("old", "00", 100, 0), ("low", "01", None, 0),
                                             ("a", "10", 1000, 10), ("b", "11", 2000, 10))
    ]
    items: list[object] = [*nodes, topology("default", "rack", "host")]
    for name, where, limit, priority in running:
        items += [pod(f"{name}-0", gpus=8, group=name, node_name=where, started_at=0.0),
                  group(name, 1, runtime_limit_seconds=limit, priority=priority)]
    items += [pod(f"big-{i}", gpus=8, group="big") for i in range(2)]
    items.append(group("big", 2, required="rack", runtime_limit_seconds=5000, creation=1.0,
                       priority=10))
    items += [pod("urgent-0", gpus=8, group="urgent"), group("urgent", 1, priority=100)]
    items += [pod("short-0", gpus=8, group="short"),
              group("short", 1, runtime_limit_seconds=60, creation=2.0, priority=10)]
    items += [pod("small-0", gpus=4, group="small"), group("small", 1, creation=3.0)]
    return items


def test_a_cycle_that_evicts_preempts_estimates_and_places_leaves_no_cyclic_garbage() -> None:
    snapshot = snapshot_of(_cluster())
    gc.collect()
    gc.disable()
    try:
        result = run_cycle(snapshot, None, 200.0, estimate=True)
        evicted = {e.pod for e in result.evictions}
        starts = {e.group for e in result.expected_starts}
        placed = {b.group for b in result.bindings}
        del result, snapshot
        found = gc.collect()
    finally:
        gc.enable()
    # the cycle did each kind of work whose objects are checked
    assert {"default/old-0", "default/low-0"} <= evicted
    assert "default/big" in starts
    assert placed
    assert found == 0
