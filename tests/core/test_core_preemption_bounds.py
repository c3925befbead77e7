"""A gang that no eviction can help is told so without the cycle building eviction units.

In bench-core's none-fit (1,000 gangs of one priority that fit nowhere, 4,000 nodes)
building the units was most of the victim search's cost though no unit could ever be
taken: the queue's priority bounds (`priority_bounds`) prove that first. These tests
drive `Preemptions.failed` as `run_cycle` does after a gang found no room.
"""

from __future__ import annotations

from core_builders import racks, snapshot_of, topology
from test_core_preemption import running_gang, waiting_gang

from phalanx.core import PriorityClassInfo, QueueInfo, SchedulerConfig
from phalanx.core.admission.admit import seed_ledger
from phalanx.core.admission.members import build_works
from phalanx.core.model.status import Problem, Reason, StatusCode
from phalanx.core.placement.gang import GangRequest
from phalanx.core.placement.routes import Route, route_of
from phalanx.core.placement.state import CycleState
from phalanx.core.preemption.cycle import Preemptions
from phalanx.core.preemption.find import Finder
from phalanx.core.preemption.reservations import Failure
from phalanx.core.snapshot.shapes import demand_of

HIGH = PriorityClassInfo("high", 1000)
LOW = PriorityClassInfo("low", 0)
NO_ROOM = Problem(StatusCode.UNSCHEDULABLE, Reason.NO_DOMAIN_FITS, "no room")
NODES = racks(1, 2)
BUSY = [n.name for n in NODES]


def fail(*items: object, gang: str = "default/big") -> tuple[Preemptions, Problem]:
    """The cycle's preemption state once `gang` could not be placed, and its problem."""
    flat: list[object] = [HIGH, LOW, topology("default", "block", "rack", "host"), *NODES]
    for item in items:
        flat.extend(item if isinstance(item, list) else [item])
    index = snapshot_of(flat).index
    works = build_works(index)
    ledger = seed_ledger(index, works)
    config = SchedulerConfig()
    preemptions = Preemptions(CycleState(index, None), works, config, 0.0)
    work = next(w for w in works if w.key == gang)
    route = route_of(index, work, config)
    assert isinstance(route, Route)
    shapes = work.shapes[: work.mandatory]
    request = GangRequest(work.gang, shapes, demand_of(shapes), route.topology, route.limit)
    return preemptions, preemptions.failed(Failure(work, request, route, lambda: NO_ROOM), ledger)


def units_built(finder: Finder) -> bool:
    return "units" in vars(finder)  # where functools.cached_property keeps them


def test_nothing_below_the_gang_in_its_queue_builds_no_units() -> None:
    preemptions, problem = fail(
        running_gang("peer", BUSY, priority="high"), waiting_gang("big", 2, priority="high")
    )
    assert not units_built(preemptions.finder)
    assert not preemptions.evictions
    assert problem == NO_ROOM  # one priority everywhere: nothing to say


def test_lower_priority_work_of_another_queue_builds_no_units() -> None:
    preemptions, problem = fail(
        running_gang("other", BUSY, priority="low", queue="team-b"),
        waiting_gang("big", 2, priority="high", queue="team-a"),
        QueueInfo("team-a"),
        QueueInfo("team-b"),
    )
    assert not units_built(preemptions.finder)
    assert not preemptions.evictions
    assert problem.message == (
        "no room; preemption cannot help: it would not fit with every gang of queue team-a gone"
    )


def test_lower_priority_work_of_its_own_queue_is_searched_and_evicted() -> None:
    preemptions, problem = fail(
        running_gang("low", BUSY, priority="low"), waiting_gang("big", 2, priority="high")
    )
    assert units_built(preemptions.finder)
    assert {e.group for e in preemptions.evictions} == {"default/low"}
    assert problem.reason is Reason.PREEMPTING


def test_a_queue_below_its_guarantee_searches_other_queues() -> None:
    guaranteed = QueueInfo("team-a", guarantee={"nvidia.com/gpu": 16_000})
    preemptions, problem = fail(
        running_gang("other", BUSY, priority="high", queue="team-b"),
        waiting_gang("big", 2, priority="low", queue="team-a"),
        guaranteed,
        QueueInfo("team-b"),
    )
    assert units_built(preemptions.finder)
    assert {e.group for e in preemptions.evictions} == {"default/other"}
    assert problem.reason is Reason.PREEMPTING
