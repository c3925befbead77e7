"""The starvation reservation's search runs once per gang shape while nothing changes.

On seed 1 of the Alibaba simulation two cycles searched room for 142 and 165 starving
single-pod gangs of 34 and 36 shapes, none of which found any: 5-10 s a cycle. A search
that found no room finds none for the next gang of the same shape and rules as long as
the cluster state, the victims taken and the pods leaving are the same. These tests
drive `Preemptions.failed` as `run_cycle` does, for one gang after another, with a
finder that counts its searches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial

from core_builders import group, node, pod, snapshot_of

from phalanx.core import PriorityClassInfo, SchedulerConfig
from phalanx.core.admission.admit import seed_ledger
from phalanx.core.admission.members import GroupWork, build_works
from phalanx.core.model.status import Problem, Reason, StatusCode
from phalanx.core.placement.gang import GangRequest
from phalanx.core.placement.routes import Route, route_of
from phalanx.core.placement.state import CycleState
from phalanx.core.preemption.cycle import Preemptions
from phalanx.core.preemption.find import Finder, Found
from phalanx.core.preemption.reservations import Failure
from phalanx.core.preemption.units import build_units, priority_bounds
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.snapshot.shapes import demand_of

LOW = PriorityClassInfo("low", 0)
NO_ROOM = Problem(StatusCode.UNSCHEDULABLE, Reason.NO_DOMAIN_FITS, "no room")


class CountingFinder(Finder):
    """The real finder, counting its searches."""

    searches = 0

    def find(self, *args: object, **kwargs: object) -> Found | None:
        self.searches += 1
        return super().find(*args, **kwargs)  # type: ignore[arg-type]


def searches(waiting: Sequence[tuple[str, int]], place: Callable[[CycleState], None]) -> int:
    """Searches made for gangs `waiting` (name, GPUs), starving behind pods that may not
    be evicted and one small pod that may (placed while they waited), one after another;
    `place` changes the state between the first and the second gang."""
    items: list[object] = [LOW, node("n0"), node("n1")]
    items += [pod("wall-0", gpus=7, node_name="n0"), pod("wall-1", gpus=8, node_name="n1")]
    items.append(pod("tiny-0", gpus=1, node_name="n0", started_at=50.0))
    for name, gpus in waiting:
        items += [
            pod(f"{name}-0", gpus=gpus, group=name),
            group(name, 1, creation=0.0, priority_class_name="low"),
        ]
    walls = frozenset({"default/wall-0", "default/wall-1"})
    index = replace(snapshot_of(items), eviction_refused=walls).index
    works = build_works(index)
    config = SchedulerConfig(explain_preemption=False)  # its note searches too (kept apart)
    ledger, state = seed_ledger(index, works), CycleState(index)
    preemptions = Preemptions(state, works, config, 400.0)
    priorities = {w.key: w.priority for w in works}
    finder = CountingFinder(state, partial(build_units, index, priorities, 0.0),
                            priority_bounds(index, priorities))  # fmt: skip
    preemptions._finder = finder
    for i, (name, _) in enumerate(waiting):
        if i == 1:
            place(state)
        work = next(w for w in works if w.key == f"default/{name}")
        problem = preemptions.failed(failure(index, work, config), ledger)
        assert "reserved" not in problem.message
    return finder.searches


def failure(index: ClusterIndex, work: GroupWork, config: SchedulerConfig) -> Failure:
    route = route_of(index, work, config)
    assert isinstance(route, Route)
    shapes = work.shapes[: work.mandatory]
    request = GangRequest(work.gang, shapes, demand_of(shapes), route.topology, route.limit)
    return Failure(work, request, route, lambda: NO_ROOM)


def unchanged(state: CycleState) -> None:
    """Nothing placed between the gangs."""


def test_gangs_of_one_shape_search_once() -> None:
    assert searches([("a", 8), ("b", 8), ("c", 8)], unchanged) == 1


def test_a_gang_of_another_shape_searches_again() -> None:
    assert searches([("a", 8), ("b", 4), ("c", 8)], unchanged) == 2


def test_a_change_of_the_state_searches_again() -> None:
    def tiny_leaves(state: CycleState) -> None:
        position = state.index.node_position["n0"]
        state.unplace(position, next(p for p in state.index.pods if p.name == "tiny-0"))

    assert searches([("a", 8), ("b", 8), ("c", 8)], tiny_leaves) == 2
