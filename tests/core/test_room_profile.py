"""The room over time (`RoomProfile`) answers "when does this gang fit first" as the
placement itself would: at the moment it gives, `place_gang` places the gang on the
cluster as it will be then (the work that reached its limit gone, the gangs planned
before it in); at the moment before, it does not. Random clusters, random running work
(some with no limit), random waiting gangs; each gang planned where the profile says,
as the estimate does."""

from __future__ import annotations

from dataclasses import dataclass

from core_builders import group, pod, racks, snapshot_of, topology
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.core import PodInfo
from phalanx.core.model.names import GroupKey
from phalanx.core.placement.gang import GangRequest, place_gang
from phalanx.core.placement.state import CycleState
from phalanx.core.snapshot.index import ClusterIndex
from phalanx.core.snapshot.shapes import demand_of, shapes_of
from phalanx.core.timeline.estimate import placed_pods, running_occupants
from phalanx.core.timeline.profile import FOREVER, RoomProfile
from phalanx.topology.tree import ROOT_LEVEL

NOW = 1000.0
RACK = 1  # the level index of "rack" in topology default: block, rack


@dataclass(frozen=True)
class Plan:
    key: GroupKey
    pods: tuple[tuple[PodInfo, int], ...]
    end: float


@st.composite
def clusters(
    draw: st.DrawFn,
) -> tuple[ClusterIndex, list[GangRequest], list[int | None]]:
    nodes = racks(draw(st.integers(1, 3)), draw(st.integers(1, 3)), blocks=draw(st.integers(1, 2)))
    items: list[object] = [*nodes, topology("default", "block", "rack")]
    for n, spec in enumerate(nodes):
        free = 8
        for j in range(draw(st.integers(0, 2))):
            gpus = draw(st.sampled_from([g for g in (1, 2, 4, 8) if g <= free] or [0]))
            if not gpus:
                break
            free -= gpus
            name = f"run-{n}-{j}"
            limit = draw(st.one_of(st.none(), st.integers(100, 5000)))
            items += [pod(f"{name}-0", gpus=gpus, group=name, node_name=spec.name,
                          started_at=NOW - draw(st.integers(0, 90))),
                      group(name, 1, runtime_limit_seconds=limit)]  # fmt: skip
    requests, limits = [], []
    for g in range(draw(st.integers(1, 6))):
        size, gpus = draw(st.integers(1, 5)), draw(st.sampled_from((2, 4, 8)))
        pods = tuple(pod(f"wait-{g}-{i}", gpus=gpus, group=f"wait-{g}") for i in range(size))
        shapes = shapes_of(pods)
        ranged = draw(st.booleans())
        requests.append(GangRequest(pods, shapes, demand_of(shapes),
                                    "default" if ranged else None,
                                    RACK if ranged else ROOT_LEVEL))  # fmt: skip
        limits.append(draw(st.one_of(st.none(), st.integers(50, 4000))))
    return snapshot_of(items).index, requests, limits


def fits_at(index: ClusterIndex, request: GangRequest, plans: list[Plan], moment: float) -> bool:
    """Does `place_gang` place the gang on the cluster as it is at `moment`?"""
    state = CycleState(index)
    for occupant in running_occupants(index, NOW):
        if occupant.end <= moment:
            for victim, position in occupant.pods:
                state.unplace(position, victim)
    for plan in plans:
        if plan.end > moment:
            for placed, position in plan.pods:
                state.place(position, placed)
    return place_gang(state, request) is not None


@settings(max_examples=150, deadline=None)
@given(clusters())
def test_each_gang_fits_first_at_the_moment_the_profile_gives(
    drawn: tuple[ClusterIndex, list[GangRequest], list[int | None]],
) -> None:
    index, requests, limits = drawn
    state = CycleState(index)
    occupants = running_occupants(index, NOW)
    profile = RoomProfile(state, [(o.group, o.pods, o.end) for o in occupants], NOW)
    profile.prepare(requests)
    plans: list[Plan] = []
    for number, (request, limit) in enumerate(zip(requests, limits, strict=True)):
        assert profile.answers(request)
        at, placement = profile.earliest(request)
        ends = {NOW, *(o.end for o in occupants), *(p.end for p in plans)}
        moments = sorted(m for m in ends if m != FOREVER)
        if at is None or placement is None:
            assert not fits_at(index, request, plans, moments[-1])
            continue
        assert fits_at(index, request, plans, at)
        earlier = [m for m in moments if m < at]
        if earlier:
            assert not fits_at(index, request, plans, earlier[-1])
        pods = placed_pods(state, placement.assignments)
        check = CycleState(index)
        for occupant in occupants:
            if occupant.end <= at:
                for victim, position in occupant.pods:
                    check.unplace(position, victim)
        for plan in plans:
            for placed, position in plan.pods if plan.end > at else ():
                check.place(position, placed)
        for placed, position in pods:  # the profile's nodes hold the gang then
            check.place(position, placed)
            assert all(amount >= 0 for amount in check.free[position].values())
        if request.topology is not None:
            tree = state.tree("default")
            assert len({tree.node_ancestors[n][RACK + 1] for _, n in pods}) == 1
        end = at + limit if limit is not None else FOREVER
        key = GroupKey(f"default/wait-{number}")
        profile.commit(key, pods, end)
        plans.append(Plan(key, pods, end))
