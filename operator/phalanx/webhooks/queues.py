"""What a Queue's schema cannot refuse: a `parent` chain that loops, and children
guaranteed more than their parent may ever use (pure).

The queue tree is the one the core admits by (`core.admission.queues.QueueLedger`:
the chain of a queue and its ancestors); guarantees and capabilities are read by the
core's parser (`core.parse.queue`), in its units. A parent that does not exist yet is
the unknown-queue case of `podgroups.py`: refused, or accepted with a warning when the
setting allows it (GitOps tools apply objects in no fixed order).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from phalanx.core.admission.queues import QueueLedger
from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.inputs import QueueInfo
from phalanx.core.parse.queue import parse_queue
from phalanx.core.snapshot.resources import display_name, format_amount


@dataclass(frozen=True, slots=True)
class Verdict:
    """`refusal`: why the object is refused, starting with the field (None: allowed);
    `warnings`: shown to whoever applied it when it is allowed."""

    refusal: str | None = None
    warnings: tuple[str, ...] = ()


def validate_queue(
    obj: Mapping[str, Any], others: Mapping[str, QueueInfo], allow_unknown: bool
) -> Verdict:
    """`others`: the queues that exist, by name (the object's old version among them is
    replaced by this one)."""
    try:
        queue = parse_queue(obj)
    except InvalidObject as error:
        return Verdict(f"{error.field}: {error.message}")
    queues = {**others, queue.name: queue}
    problem = (_cycle(queue, queues) or _children_above(queue, queues)
               or _above_parent(queue, queues))
    if problem:
        return Verdict(problem)
    if queue.parent and queue.parent not in queues:
        message = f"spec.parent: queue {queue.parent} does not exist"
        if allow_unknown:
            return Verdict(warnings=(f"{message} (yet); until it does, this queue has no parent",))
        return Verdict(message + " (create it first)")
    return Verdict()


def _cycle(queue: QueueInfo, queues: Mapping[str, QueueInfo]) -> str | None:
    """A chain of parents that comes back to this queue (one that loops further up
    without it, made before the webhook ran, is not this object's fault)."""
    chain = QueueLedger(queues).chain(queue.name)
    if queues[chain[-1]].parent != queue.name:
        return None
    loop = " -> ".join((*chain, queue.name))
    return f"spec.parent: {queue.parent} makes a cycle of parents ({loop})"


def _children_above(queue: QueueInfo, queues: Mapping[str, QueueInfo]) -> str | None:
    """This queue as a parent: its capability must hold its children's guarantees."""
    children = [q for q in queues.values() if q.parent == queue.name and q.name != queue.name]
    problem = _sum_above(queue, children)
    if problem is None:
        return None
    resource, total, capability = problem
    return (f"spec.capability: {_amount(resource, capability)} is less than its children "
            f"guarantee in all ({_amount(resource, total)}: {_names(children, resource)})")


def _above_parent(queue: QueueInfo, queues: Mapping[str, QueueInfo]) -> str | None:
    """This queue as a child: its guarantee and its siblings' within the parent's capability."""
    parent = queues.get(queue.parent or "")
    if parent is None:
        return None
    children = [q for q in queues.values() if q.parent == parent.name]
    problem = _sum_above(parent, children)
    if problem is None or not (queue.guarantee or {}).get(problem[0]):
        return None
    resource, total, capability = problem
    return (f"spec.guarantee: the children of queue {parent.name} would be guaranteed "
            f"{_amount(resource, total)} in all ({_names(children, resource)}), above its "
            f"capability of {_amount(resource, capability)}")


def _sum_above(parent: QueueInfo, children: list[QueueInfo]) -> tuple[str, int, int] | None:
    """The first resource whose guarantees, summed over `children`, exceed the parent's
    capability: (resource, sum, capability)."""
    if parent.capability is None:
        return None
    for resource, capability in sorted(parent.capability.items()):
        total = sum((child.guarantee or {}).get(resource, 0) for child in children)
        if total > capability:
            return resource, total, capability
    return None


def _names(children: list[QueueInfo], resource: str) -> str:
    return ", ".join(
        f"{child.name} {format_amount(resource, (child.guarantee or {}).get(resource, 0))}"
        for child in sorted(children, key=lambda q: q.name)
        if (child.guarantee or {}).get(resource)
    )


def _amount(resource: str, milli: int) -> str:
    return f"{format_amount(resource, milli)} {display_name(resource)}"
