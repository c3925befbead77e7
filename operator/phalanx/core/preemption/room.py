"""How many pods of a gang one domain could take if some running pods were gone.

Counts start from the cycle state's per-domain aggregates and are corrected only on
the nodes the removed pods touch, so trying a unit costs a few `fit_count` calls, not
a pass over the domain. For a gang of one shape without sub-groups these counts are
exactly what `place_gang` needs; otherwise they are a necessary condition and the
final choice is checked with `place_gang` itself.
"""

from __future__ import annotations

from collections.abc import Iterable

from phalanx.core.model import PodInfo
from phalanx.core.shapes import Shape
from phalanx.core.state import CycleState


class DomainRoom:
    """Room for `demand` inside one domain, as pods are taken away and put back."""

    def __init__(
        self,
        state: CycleState,
        demand: tuple[tuple[Shape, int], ...],
        topology: str | None,
        domain: int,
        inside: frozenset[int] | None,
    ) -> None:
        self.state = state
        self.demand = demand
        self.inside = inside  # nodes of the domain (None: every node)
        self.counts = [state.shape(shape) for shape, _ in demand]
        self.totals = [state.domain_counts(shape, topology)[domain] for shape, _ in demand]
        self.freed: dict[int, dict[str, int]] = {}
        self.freed_pods: dict[int, int] = {}
        self.rooms: dict[int, list[int]] = {}
        self.needs = [count for _, count in demand]
        self.names = sorted({name for shape, _ in demand for name, _ in shape.requests})

    def fits(self) -> bool:
        return all(total >= count for total, count in zip(self.totals, self.needs, strict=True))

    def take(self, pods: Iterable[tuple[PodInfo, int]]) -> None:
        self._change(pods, 1)

    def give_back(self, pods: Iterable[tuple[PodInfo, int]]) -> None:
        self._change(pods, -1)

    def _change(self, pods: Iterable[tuple[PodInfo, int]], sign: int) -> None:
        """Only the resources the gang asks for matter to its room."""
        touched: set[int] = set()
        inside, names = self.inside, self.names
        for pod, node in pods:
            if inside is not None and node not in inside:
                continue
            freed = self.freed.get(node)
            if freed is None:
                freed = self.freed[node] = dict.fromkeys(names, 0)
            requests = pod.requests
            for name in names:
                freed[name] += sign * requests.get(name, 0)
            self.freed_pods[node] = self.freed_pods.get(node, 0) + sign
            touched.add(node)
        for node in touched:
            self._recount(node)

    def _recount(self, node: int) -> None:
        """The node's room for each shape with the freed requests added back (inlined
        `fit_count`: this is the search's inner loop)."""
        base, freed = self.state.free[node], self.freed[node]
        pods_free = self.state.pods_free[node] + self.freed_pods[node]
        before = self.rooms.get(node)
        after: list[int] = []
        for i, (shape, _) in enumerate(self.demand):
            counts = self.counts[i]
            old = counts.node[node] if before is None else before[i]
            new = pods_free if counts.static[node] is None else 0
            for name, amount in shape.requests:
                if new <= 0:
                    break
                fits = (base.get(name, 0) + freed[name]) // amount
                if fits < new:
                    new = fits
            new = max(new, 0)
            self.totals[i] += new - old
            after.append(new)
        self.rooms[node] = after
