"""Placing a gang: all of its pods inside one topology domain, or none of them.

Levels are tried from the finest up to the coarsest allowed (the required level, or the
whole cluster); at each level the domains that can hold the gang are found from the
per-domain aggregates, and the tightest one (least room left for the gang's main shape)
is taken, so large free domains stay whole for large jobs. Inside it the gang descends
through as few child domains and nodes as possible, giving the remainder to the
tightest child. With `spread` (the kube-scheduler-like baseline) the roomiest domain
is taken and each pod goes to the node with the most room left.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice

from phalanx.core.model.inputs import PodInfo
from phalanx.core.placement.node_choice import candidates, least_fragmenting
from phalanx.core.placement.state import CycleState
from phalanx.core.snapshot.shapes import Shape, demand_of
from phalanx.topology.tree import ROOT, ROOT_LEVEL, DomainTree

MAX_ATTEMPTS_PER_LEVEL = 64
_INDEXED_LEAF = 32  # nodes in a leaf domain above which its nodes are kept by room


@dataclass(slots=True)
class GangRequest:
    """Pods to place together (in chunk order) and the rules they obey.

    `limit` is the coarsest level the gang may span (-1: the whole cluster);
    `anchors` are nodes already holding pods of the group, which new pods join.
    Not frozen, though never changed: one is made for each of the ~2,400 gangs that
    wait in a late Alibaba simulator cycle, and a frozen dataclass's `__init__` (each
    field set by `object.__setattr__`) took 3.3 us against 0.5 us for its ten fields.
    """

    pods: tuple[PodInfo, ...]
    shapes: tuple[Shape, ...]
    demand: tuple[tuple[Shape, int], ...]
    topology: str | None
    limit: int
    preferred: int | None = None
    sub_group: tuple[int, int] | None = None
    anchors: tuple[int, ...] = ()
    spread: bool = False
    fragmentation: bool = False
    """Place a lone pod on the node it fragments least (`phalanx.core.placement.node_choice`)."""


@dataclass(frozen=True, slots=True)
class GangPlacement:
    assignments: tuple[tuple[PodInfo, int], ...]
    domain: int
    level: int
    climbed: int


def place_gang(state: CycleState, request: GangRequest) -> GangPlacement | None:
    """Place every pod of the request, or change nothing and return None."""
    tree = state.tree(request.topology)
    demand = request.demand
    primary = max(demand, key=lambda item: (item[1], _neg(item[0].size_key)))[0]
    for level in range(len(tree.levels) - 1, request.limit - 1, -1):
        for domain in _candidates(state, tree, request, demand, primary, level):
            placed = _try_domain(state, tree, request, domain)
            if placed is not None:
                climbed = _climbed(request.preferred, level)
                return GangPlacement(tuple(placed), domain, level, climbed)
    return None


def _neg(key: tuple[int, int, int, object]) -> tuple[int, int, int]:
    return (-key[0], -key[1], -key[2])


def _climbed(preferred: int | None, level: int) -> int:
    return max(0, preferred - level) if preferred is not None else 0


def _candidates(
    state: CycleState,
    tree: DomainTree,
    request: GangRequest,
    demand: tuple[tuple[Shape, int], ...],
    primary: Shape,
    level: int,
) -> Iterable[int]:
    """Domains of the level that can hold the gang, tightest first (lazily: the first
    one nearly always takes it)."""
    if request.anchors:
        domains: tuple[int, ...] | list[int] = sorted(
            {tree.node_ancestors[node][level + 1] for node in request.anchors}
        )
    else:
        for shape, count in demand:
            if state.most_at_level(shape, request.topology, level) < count:
                return []
        if level != ROOT_LEVEL:
            return _indexed(state, tree, request, demand, primary, level)
        domains = (ROOT,)
    aggregates = [(state.domain_counts(s, request.topology), n) for s, n in demand]
    fitting = [
        d
        for d in domains
        if all(agg[d] >= n for agg, n in aggregates) and tree.within_labelled(d, request.limit)
    ]
    room = state.domain_counts(primary, request.topology)
    if request.spread:  # least allocated first
        fitting.sort(key=lambda d: (-room[d], d))
    else:  # tightest first
        fitting.sort(key=lambda d: (room[d], d))
    return fitting[:MAX_ATTEMPTS_PER_LEVEL] if len(demand) > 1 or request.sub_group else fitting


def _indexed(
    state: CycleState,
    tree: DomainTree,
    request: GangRequest,
    demand: tuple[tuple[Shape, int], ...],
    primary: Shape,
    level: int,
) -> Iterable[int]:
    """The same order as the sort above, walked from the level's room buckets of the
    primary shape; the other shapes and the labelled check filter on the way."""
    need = next(count for shape, count in demand if shape == primary)
    rooms = state.level_rooms(primary, request.topology, level)
    ordered = rooms.roomiest(need) if request.spread else rooms.tightest(need)
    others = [
        (state.domain_counts(s, request.topology), n) for s, n in demand if s != primary
    ]
    limit = request.limit
    fitting = (
        d for d in ordered
        if all(agg[d] >= n for agg, n in others) and tree.within_labelled(d, limit)
    )
    if len(demand) > 1 or request.sub_group:
        return islice(fitting, MAX_ATTEMPTS_PER_LEVEL)
    return fitting


def _try_domain(
    state: CycleState, tree: DomainTree, request: GangRequest, domain: int
) -> list[tuple[PodInfo, int]] | None:
    log: list[tuple[PodInfo, int]] = []
    if _assign(state, tree, request, domain, log):
        return log
    _rollback(state, log, 0)
    return None


def _assign(
    state: CycleState,
    tree: DomainTree,
    request: GangRequest,
    domain: int,
    log: list[tuple[PodInfo, int]],
) -> bool:
    pairs = list(zip(request.pods, request.shapes, strict=True))
    sub = request.sub_group
    if sub is None or sub[1] <= tree.level_of[domain]:
        return _fill_mixed(state, tree, request, domain, pairs, log)
    size, sub_level = sub
    for start in range(0, len(pairs), size):
        chunk = pairs[start : start + size]
        if not _place_chunk(
            state, tree, request, tree.descendants_at(domain, sub_level), chunk, log
        ):
            return False
    return True


def _place_chunk(
    state: CycleState,
    tree: DomainTree,
    request: GangRequest,
    domains: tuple[int, ...],
    chunk: list[tuple[PodInfo, Shape]],
    log: list[tuple[PodInfo, int]],
) -> bool:
    """Put one sub-group inside a single one of `domains`, the tightest that takes it."""
    demand = demand_of([shape for _, shape in chunk])
    aggregates = [(state.domain_counts(s, request.topology), n) for s, n in demand]
    fitting = [
        d
        for d in domains
        if all(agg[d] >= n for agg, n in aggregates) and tree.within_labelled(d, request.limit)
    ]
    room = aggregates[0][0]
    for domain in sorted(fitting, key=lambda d: (room[d], d))[:MAX_ATTEMPTS_PER_LEVEL]:
        checkpoint = len(log)
        if _fill_mixed(state, tree, request, domain, chunk, log):
            return True
        _rollback(state, log, checkpoint)
    return False


def _fill_mixed(
    state: CycleState,
    tree: DomainTree,
    request: GangRequest,
    domain: int,
    pairs: list[tuple[PodInfo, Shape]],
    log: list[tuple[PodInfo, int]],
) -> bool:
    """Place pods of every shape inside `domain`, biggest shapes first."""
    by_shape: dict[Shape, list[PodInfo]] = {}
    for pod, shape in pairs:
        by_shape.setdefault(shape, []).append(pod)
    for shape in sorted(by_shape, key=lambda s: s.size_key):
        pods = by_shape[shape]
        if state.domain_counts(shape, request.topology)[domain] < len(pods):
            return False
        plan = _split(state, tree, request, shape, domain, len(pods))
        queue = iter(pods)
        for node, count in plan:
            for _ in range(count):
                pod = next(queue)
                state.place(node, pod)
                log.append((pod, node))
    return True


def _split(
    state: CycleState,
    tree: DomainTree,
    request: GangRequest,
    shape: Shape,
    domain: int,
    count: int,
) -> list[tuple[int, int]]:
    """(node, pods) pairs for `count` pods of one shape inside `domain`."""
    children = tree.children[domain]
    if not children:
        if len(tree.nodes_under[domain]) > _INDEXED_LEAF:
            indexed = _leaf_plan(state, request, shape, domain, count)
            if indexed is not None:
                return indexed
        node_counts = state.shape(shape).node
        items = [(node_counts[i], i) for i in tree.nodes_under[domain] if node_counts[i] > 0]
        if request.fragmentation and count == 1 and not request.spread and len(items) > 1:
            # one candidate (a host domain) needs no grading: it is the choice either way
            node = least_fragmenting(state, shape, [i for _, i in items])
            if node is not None:
                return [(node, 1)]
        return _spread(items, count) if request.spread else pack(items, count)
    aggregate = state.domain_counts(shape, request.topology)
    items = [(aggregate[c], c) for c in children if aggregate[c] > 0]
    plan: list[tuple[int, int]] = []
    for child, share in pack(items, count):
        plan.extend(_split(state, tree, request, shape, child, share))
    return plan


def _leaf_plan(
    state: CycleState, request: GangRequest, shape: Shape, domain: int, count: int
) -> list[tuple[int, int]] | None:
    """What `pack` / `_spread` would choose in a leaf domain of many nodes (the whole
    cluster of a flat tree), from its nodes' room buckets, when one node takes all
    `count` pods (packing) or the pod is alone (spreading); None otherwise."""
    rooms = state.leaf_rooms(shape, request.topology, domain)
    if request.spread:
        most = rooms.most() if count == 1 else None
        return [(most[1], 1)] if most is not None else None
    if request.fragmentation and count == 1:
        node = least_fragmenting(state, shape, rooms.lowest(1, candidates(shape, state.mix)))
    else:
        node = next(iter(rooms.tightest(count)), None)
    return [(node, count)] if node is not None else None


def pack(items: list[tuple[int, int]], count: int) -> list[tuple[int, int]]:
    """Fewest members holding `count`: take the largest until the tightest one that
    holds the rest appears. `items` are (room, id); returns (id, share)."""
    items = sorted(items)
    rooms = [room for room, _ in items]
    end, remaining, plan = len(items), count, []
    while remaining > 0 and end > 0:
        tight = bisect_left(rooms, remaining, 0, end)
        if tight < end:
            plan.append((items[tight][1], remaining))
            return plan
        end -= 1
        room, ident = items[end]
        plan.append((ident, room))
        remaining -= room
    if remaining > 0:
        raise ValueError("aggregate room disagrees with its members")
    return plan


def _spread(items: list[tuple[int, int]], count: int) -> list[tuple[int, int]]:
    """Each pod to the member with the most room left (least allocated first)."""
    heap = [(-room, ident) for room, ident in items]
    heapq.heapify(heap)
    shares: dict[int, int] = {}
    for _ in range(count):
        negative_room, ident = heapq.heappop(heap)
        shares[ident] = shares.get(ident, 0) + 1
        if negative_room < -1:
            heapq.heappush(heap, (negative_room + 1, ident))
    return sorted(shares.items())


def _rollback(state: CycleState, log: list[tuple[PodInfo, int]], checkpoint: int) -> None:
    while len(log) > checkpoint:
        pod, node = log.pop()
        state.unplace(node, pod)
