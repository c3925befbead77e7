"""Queue usage and capability along the queue tree (spec.parent), for one cycle.

Usage of a queue is what its groups' pods on nodes request plus what was admitted
earlier in this cycle; a parent's usage includes its children's. Nothing is carried
between cycles, so an admitted group that could not be placed holds no quota. What a
queue ran before (its decayed usage, `usage.py`) comes in as `history` and is added to
its share: the order across queues is by decayed usage plus current allocation, both in
resource-seconds (the allocation over `usage.WINDOW`), as shares of what the cluster
gives in that window.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from phalanx.core.model.inputs import QueueInfo
from phalanx.core.snapshot.resources import Resources, display_name, format_amount


@dataclass(frozen=True, slots=True)
class Shortfall:
    """A queue on the chain without room: `used` + `need` > `capability` of `resource`."""

    queue: str
    resource: str
    used: int
    capability: int
    need: int

    def message(self) -> str:
        unit = display_name(self.resource)
        used = format_amount(self.resource, self.used)
        cap = format_amount(self.resource, self.capability)
        need = format_amount(self.resource, self.need)
        if self.used == 0 and self.need > self.capability:
            return f"queue {self.queue}: capability is {cap} {unit}, needs {need}"
        return f"queue {self.queue}: {used} of {cap} {unit} used, needs {need}"


class QueueLedger:
    def __init__(
        self, queues: Mapping[str, QueueInfo], history: Mapping[str, float] | None = None
    ) -> None:
        self.queues = queues
        # queue -> decayed usage as a share of the cluster over usage.WINDOW (usage.py)
        self.history = history or {}
        self.used: dict[str, dict[str, int]] = {name: {} for name in queues}
        self._chains: dict[str, tuple[str, ...]] = {}
        self._shares: dict[str, float] = {}

    def chain(self, queue: str) -> tuple[str, ...]:
        """The queue and its ancestors; a missing parent or a loop ends the chain."""
        chain = self._chains.get(queue)
        if chain is None:
            names: list[str] = []
            current: str | None = queue
            while current is not None and current in self.queues and current not in names:
                names.append(current)
                current = self.queues[current].parent
            chain = self._chains[queue] = tuple(names)
        return chain

    def add(self, queue: str, amounts: Resources) -> None:
        for name in self.chain(queue):
            self._shares.pop(name, None)
            used = self.used[name]
            for resource, amount in amounts.items():
                used[resource] = used.get(resource, 0) + amount

    def shortfall(self, queue: str, need: Resources, *, empty: bool = False) -> Shortfall | None:
        """The first queue of the chain (then resource, by name) without room for `need`;
        with `empty`, ignore usage (is the need beyond capability outright?)."""
        for name in self.chain(queue):
            capability = self.queues[name].capability
            if capability is None:
                continue
            used = {} if empty else self.used[name]
            for resource in sorted(capability):
                amount = need.get(resource, 0)
                if amount and used.get(resource, 0) + amount > capability[resource]:
                    return Shortfall(
                        name, resource, used.get(resource, 0), capability[resource], amount
                    )
        return None

    def closed(self, queue: str) -> str | None:
        """The first closed queue on the chain, if any."""
        for name in self.chain(queue):
            if not self.queues[name].open:
                return name
        return None

    def share(self, queue: str, total: Resources) -> float:
        """The key of the order across queues (lowest first): the weighted dominant share
        of what it uses now (max over resources of used/total, / weight), plus its past
        usage as a share of what the cluster gives in usage.WINDOW seconds (0 without
        history: exactly DRF). So a queue whose decayed usage + allocation x WINDOW is
        lower goes first, however much more it runs now; why the window is short:
        usage.py."""
        share = self._shares.get(queue)
        if share is None:
            share = self._share(queue, total) + self.history.get(queue, 0.0)
            self._shares[queue] = share
        return share

    def _share(self, queue: str, total: Resources) -> float:
        used = self.used.get(queue, {})
        dominant = 0.0
        for resource, amount in used.items():
            capacity = total.get(resource, 0)
            if capacity > 0 and amount > 0:
                dominant = max(dominant, amount / capacity)
        return dominant / max(1, self.queues[queue].weight)
