"""Node predicates that do not depend on free capacity: readiness, taints, selectors.

Each returns whether a node can ever take a pod with these constraints; the first
failing one names the `Exclusion` counted in the "0/N nodes are available" message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from phalanx.core.model.inputs import (
    NodeInfo,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodInfo,
    Taint,
    Toleration,
)
from phalanx.core.model.quantity import parse_int64
from phalanx.core.model.status import Exclusion

_BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


@dataclass(frozen=True, slots=True)
class Constraints:
    """The placement constraints of a pod, hashable so pods can share the work.
    `avoid_not_ready_in`: the NetworkTopology in which a pod of a new gang keeps out of
    the domains holding a NotReady node (near_not_ready.py); None: it avoids nothing."""

    node_selector: tuple[tuple[str, str], ...] = ()
    affinity: tuple[NodeSelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    avoid_not_ready_in: str | None = None


NO_CONSTRAINTS = Constraints()


def constraints_of(pod: PodInfo) -> Constraints:
    """`NO_CONSTRAINTS` itself for a pod without any (most pods): the per-cycle caches
    keyed by constraints then find it by identity, without comparing fields."""
    if not (pod.node_selector or pod.affinity or pod.tolerations):
        return NO_CONSTRAINTS
    return Constraints(
        node_selector=tuple(sorted(pod.node_selector.items())),
        affinity=pod.affinity,
        tolerations=pod.tolerations,
    )


def static_exclusion(node: NodeInfo, constraints: Constraints) -> Exclusion | None:
    """Why the node can never take such a pod in its current state (None: it can)."""
    if not node.ready:
        return Exclusion.NOT_READY
    if node.unschedulable:
        return Exclusion.CORDONED
    if node.taints and not all(tolerated(constraints.tolerations, t) for t in node.taints):
        return Exclusion.TAINT
    if not matches_selector(node.labels, constraints.node_selector):
        return Exclusion.SELECTOR
    if constraints.affinity and not any(matches_term(node, t) for t in constraints.affinity):
        return Exclusion.AFFINITY
    return None


def tolerated(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    """PreferNoSchedule never blocks; NoSchedule and NoExecute need a toleration."""
    if taint.effect not in _BLOCKING_EFFECTS:
        return True
    return any(tolerates(toleration, taint) for toleration in tolerations)


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.operator == "Exists":
        return not toleration.key or toleration.key == taint.key
    return toleration.key == taint.key and toleration.value == taint.value


def matches_selector(labels: Mapping[str, str], selector: tuple[tuple[str, str], ...]) -> bool:
    return all(labels.get(key) == value for key, value in selector)


def matches_term(node: NodeInfo, term: NodeSelectorTerm) -> bool:
    """Requirements of a term are ANDed; a term with none matches nothing."""
    if not term.match_expressions and not term.match_fields:
        return False
    return all(
        matches_requirement(node.labels.get(r.key), r) for r in term.match_expressions
    ) and all(
        matches_requirement(node.name if r.key == "metadata.name" else None, r)
        for r in term.match_fields
    )


def matches_requirement(value: str | None, requirement: NodeSelectorRequirement) -> bool:
    operator = requirement.operator
    if operator == "In":
        return value is not None and value in requirement.values
    if operator == "NotIn":
        return value is None or value not in requirement.values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt"):
        return _compare(value, requirement)
    return False


def unmatchable(constraints: Constraints) -> tuple[str, ...]:
    """The required node affinity's Gt/Lt requirements that match no node whatever its
    labels, each as "key Op 'value'": the API server accepts any label value there, but
    matching needs exactly one integer, so such a pod would wait on "didn't match Pod's
    node affinity" alone; the wait message names the requirement too (`explain`)."""
    found = []
    for term in constraints.affinity:
        for requirement in (*term.match_expressions, *term.match_fields):
            if requirement.operator not in ("Gt", "Lt"):
                continue
            values = requirement.values
            if len(values) == 1 and parse_int64(values[0]) is not None:
                continue
            shown = values[0] if len(values) == 1 else list(values)
            found.append(f"{requirement.key} {requirement.operator} {shown!r}")
    return tuple(found)


def _compare(value: str | None, requirement: NodeSelectorRequirement) -> bool:
    """Gt/Lt as Kubernetes matches them: the label and the one value each an integer
    (`parse_int64`); a label that is none matches no Gt/Lt, and a value that is none
    matches no node, as kube-scheduler and the kubelet's admission check leave it."""
    if value is None or len(requirement.values) != 1:
        return False
    actual, bound = parse_int64(value), parse_int64(requirement.values[0])
    if actual is None or bound is None:
        return False
    return actual > bound if requirement.operator == "Gt" else actual < bound
