"""The static domain tree of a NetworkTopology over the current nodes.

A node's domain at a level is the value of the first present label of that level's
`nodeLabels`; a domain is identified by its whole path (coarse to fine), so a rack
named "r1" under block "b1" differs from "r1" under "b2".

Nodes lacking a level's label: such a node forms its own singleton domain at that
level and at every finer level (path element `<none:NODE>`, which no label value can
spell), marked unlabelled. It is never grouped with other nodes by accident, and it
still serves gangs without a required level (best-effort locality). It is in no domain
of that level for a gang required on it, though (as in Kueue's topology-aware
scheduling): a singleton standing in for a missing rack label must not satisfy
"within one rack". Levels above the missing one group it normally. `missing[level]`
counts such nodes, so a level that (part of) the nodes do not carry can be reported.

Everything is plain tuples indexed by integer ids (root is id 0, level -1), built
once and shared between cycles while the topology and the nodes' labels are
unchanged; per-cycle free capacity lives elsewhere, in arrays indexed by these ids.
(networkx would hold the same tree, but at 4,096 nodes its objects cost more than
they give, so it is not used.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from phalanx.topology.spec import TopologySpec

ROOT = 0
ROOT_LEVEL = -1


def missing_label_marker(node: str) -> str:
    return f"<none:{node}>"


def _is_marker(element: str) -> bool:
    return element.startswith("<none:") and element.endswith(">")


@dataclass(frozen=True, eq=False, slots=True)
class DomainTree:
    """Domains of one topology. `node_ancestors[i]` is (root, level 0, ..., finest);
    `node_leaf[i]` the last of those; `node_counts[d]` the nodes inside domain d."""

    topology: str | None
    levels: tuple[str, ...]
    level_of: tuple[int, ...]
    path: tuple[tuple[str, ...], ...]
    parent: tuple[int, ...]
    children: tuple[tuple[int, ...], ...]
    nodes_under: tuple[tuple[int, ...], ...]
    node_ancestors: tuple[tuple[int, ...], ...]
    by_level: tuple[tuple[int, ...], ...]
    node_leaf: tuple[int, ...]
    node_counts: tuple[int, ...]
    labelled: tuple[bool, ...] = ()  # per domain: False for an unlabelled singleton
    missing: tuple[int, ...] = ()  # per level: nodes without a label of that level

    @property
    def size(self) -> int:
        return len(self.level_of)

    def name(self, domain: int) -> str:
        return "/".join(self.path[domain])

    def level_name(self, domain: int) -> str | None:
        level = self.level_of[domain]
        return None if level == ROOT_LEVEL else self.levels[level]

    def ancestor_at(self, domain: int, level: int) -> int:
        """The domain's ancestor (or itself) at `level`; ROOT for level -1."""
        while self.level_of[domain] > level:
            domain = self.parent[domain]
        return domain

    def descendants_at(self, domain: int, level: int) -> tuple[int, ...]:
        """Domains at `level` inside `domain` (the domain itself if it is at or below)."""
        if self.level_of[domain] >= level:
            return (domain,)
        found: list[int] = []
        frontier = [domain]
        while frontier:
            current = frontier.pop()
            if self.level_of[current] == level:
                found.append(current)
            else:
                frontier.extend(self.children[current])
        return tuple(sorted(found))

    def within_labelled(self, domain: int, level: int) -> bool:
        """Is the domain inside a real (labelled) domain of `level`? Always for the root
        level; a domain coarser than `level` never is."""
        if level == ROOT_LEVEL:
            return True
        if self.level_of[domain] < level:
            return False
        return self.labelled[self.ancestor_at(domain, level)]

    def nodes_in(self, domain: int) -> tuple[int, ...]:
        """Every node index inside `domain`, in node order."""
        if self.nodes_under[domain] or not self.children[domain]:
            return self.nodes_under[domain]
        found: list[int] = []
        for child in self.children[domain]:
            found.extend(self.nodes_in(child))
        return tuple(sorted(found))


def node_level_values(
    spec: TopologySpec | None, labels: Mapping[str, str]
) -> tuple[str | None, ...]:
    """The node's label value at each level (None where the node has none)."""
    if spec is None:
        return ()
    values: list[str | None] = []
    for level in spec.levels:
        value = None
        for key in level.node_labels:
            value = labels.get(key)
            if value is not None:
                break
        values.append(value)
    return tuple(values)


_CACHE: dict[object, DomainTree] = {}
_CACHE_LIMIT = 16


def tree_for(
    spec: TopologySpec | None,
    node_names: Sequence[str],
    node_labels: Sequence[Mapping[str, str]],
) -> DomainTree:
    """The tree for these nodes, reused while the spec and the node labels are unchanged."""
    values = tuple(node_level_values(spec, labels) for labels in node_labels)
    key = (spec, tuple(node_names), values)
    tree = _CACHE.get(key)
    if tree is None:
        tree = build_tree(spec, node_names, values)
        if len(_CACHE) >= _CACHE_LIMIT:
            del _CACHE[next(iter(_CACHE))]
        _CACHE[key] = tree
    return tree


def build_tree(
    spec: TopologySpec | None,
    node_names: Sequence[str],
    values: Sequence[tuple[str | None, ...]],
) -> DomainTree:
    """Build the tree from each node's per-level label values."""
    levels = tuple(level.name for level in spec.levels) if spec is not None else ()
    node_paths = [_paths(name, vals) for name, vals in zip(node_names, values, strict=True)]
    ids = _domain_ids(node_paths)
    size = len(ids) + 1
    level_of = [ROOT_LEVEL] * size
    path: list[tuple[str, ...]] = [()] * size
    parent = [-1] * size
    children: list[list[int]] = [[] for _ in range(size)]
    nodes_under: list[list[int]] = [[] for _ in range(size)]
    for domain_path, domain in ids.items():
        level_of[domain] = len(domain_path) - 1
        path[domain] = domain_path
        parent[domain] = ids[domain_path[:-1]] if len(domain_path) > 1 else ROOT
        children[parent[domain]].append(domain)
    ancestors: list[tuple[int, ...]] = []
    for index, paths in enumerate(node_paths):
        chain = (ROOT, *(ids[p] for p in paths))
        ancestors.append(chain)
        nodes_under[chain[-1]].append(index)
    by_level: list[list[int]] = [[] for _ in levels]
    for domain in range(1, size):
        by_level[level_of[domain]].append(domain)
    counts = [len(nodes) for nodes in nodes_under]
    for domain in range(size - 1, 0, -1):
        counts[parent[domain]] += counts[domain]
    labelled = tuple(not p or not _is_marker(p[-1]) for p in path)
    missing = tuple(sum(1 for v in values if v[level] is None) for level in range(len(levels)))
    return DomainTree(
        topology=spec.name if spec is not None else None,
        levels=levels,
        level_of=tuple(level_of),
        path=tuple(path),
        parent=tuple(parent),
        children=tuple(tuple(c) for c in children),
        nodes_under=tuple(tuple(n) for n in nodes_under),
        node_ancestors=tuple(ancestors),
        by_level=tuple(tuple(d) for d in by_level),
        node_leaf=tuple(chain[-1] for chain in ancestors),
        node_counts=tuple(counts),
        labelled=labelled,
        missing=missing,
    )


def _paths(node: str, values: tuple[str | None, ...]) -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []
    current: tuple[str, ...] = ()
    missing = False
    for value in values:
        missing = missing or value is None
        current = (*current, missing_label_marker(node) if missing else str(value))
        paths.append(current)
    return paths


def _domain_ids(node_paths: list[list[tuple[str, ...]]]) -> dict[tuple[str, ...], int]:
    """Ids in (level, path) order, so they never depend on the order nodes came in."""
    unique = {p for paths in node_paths for p in paths}
    ordered = sorted(unique, key=lambda p: (len(p), p))
    return {p: index + 1 for index, p in enumerate(ordered)}
