"""`kubectl phalanx topology`: the domain tree with free and total GPUs per domain.

The tree is the scheduler's own (`phalanx.topology` over the live nodes); the counts are
`phalanx.core.snapshot.gpus`, the same the NetworkTopology status reports: free GPUs count only
nodes that take pods, exactly what placement sees. A "whole-free" node has all its GPUs
free: the count a whole-node job cares about. GPUs that fractional pods share are
"fragmented": not free (no whole-GPU pod can use them), with the part still free on them
shown beside, once any exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from phalanx.core.model.names import HOSTNAME_LABEL
from phalanx.core.snapshot.gpus import MILLI, DomainGpus, domain_gpus
from phalanx.core.snapshot.picture import Snapshot
from phalanx.topology.tree import ROOT, DomainTree


@dataclass(frozen=True, slots=True)
class DomainRow(DomainGpus):
    """One domain: its GPU counts (`DomainGpus`, the core's one definition) and where it
    sits; `domain` is the tree id, `parent` the parent's id (-1 for the root)."""

    domain: int = ROOT
    parent: int = -1
    depth: int = 0
    level: str = ""
    name: str = ""


class TopologyNotFound(LookupError):
    pass


def domain_rows(snapshot: Snapshot, topology: str, depth: int | None = None) -> list[DomainRow]:
    """Domains in depth-first order down to level index `depth` (None: every level)."""
    index = snapshot.index
    if topology not in index.topologies:
        known = ", ".join(sorted(index.topologies)) or "none"
        raise TopologyNotFound(f"NetworkTopology {topology} not found (known: {known})")
    rows: list[DomainRow] = []
    _walk(index.tree(topology), ROOT, 0, depth, domain_gpus(snapshot, topology), rows)
    return rows


def _walk(
    tree: DomainTree,
    domain: int,
    depth: int,
    limit: int | None,
    counts: Sequence[DomainGpus],
    out: list[DomainRow],
) -> None:
    out.append(
        DomainRow(
            **asdict(counts[domain]),
            domain=domain,
            parent=tree.parent[domain] if domain != ROOT else -1,
            depth=depth,
            level=tree.level_name(domain) or "cluster",
            name=tree.path[domain][-1] if tree.path[domain] else tree.topology or "cluster",
        )
    )
    if limit is not None and tree.level_of[domain] >= limit:
        return
    for child in sorted(tree.children[domain], key=lambda c: tree.path[c]):
        _walk(tree, child, depth + 1, limit, counts, out)


def default_depth(snapshot: Snapshot, topology: str) -> int | None:
    """Stop above the per-node level (hostname): one line per node is rarely wanted."""
    spec = snapshot.index.topologies[topology]
    levels = spec.levels
    if len(levels) > 1 and HOSTNAME_LABEL in levels[-1].node_labels:
        return len(levels) - 2
    return None


def level_depth(snapshot: Snapshot, topology: str, level: str) -> int:
    names = [lvl.name for lvl in snapshot.index.topologies[topology].levels]
    if level not in names:
        raise TopologyNotFound(f"level {level} not in NetworkTopology {topology}: {names}")
    return names.index(level)


def format_tree(rows: Sequence[DomainRow]) -> str:
    """An indented tree with box-drawing branches and aligned numbers."""
    labels = [_prefix(rows, i) + f"{row.level} {row.name}" for i, row in enumerate(rows)]
    gpus = [f"{row.free_gpus:g}/{row.gpus:g}" for row in rows]
    nodes = [f"{row.whole_free_nodes}/{row.nodes}" for row in rows]
    widths = [max(len(cell) for cell in column) for column in (labels, gpus, nodes)]
    lines = [
        f"{label.ljust(widths[0])}  {gpu.rjust(widths[1])} GPUs free  "
        f"{node.rjust(widths[2])} nodes whole-free"
        for label, gpu, node in zip(labels, gpus, nodes, strict=True)
    ]
    if any(row.fragmented for row in rows):
        shared = [_fragments(row) for row in rows]
        width = max(len(cell) for cell in shared)
        lines = [f"{line}  {cell.rjust(width)}" for line, cell in zip(lines, shared, strict=True)]
    return "\n".join(lines)


def _fragments(row: DomainRow) -> str:
    """GPUs shared by fractional pods and what is left on them: fragmented, not free."""
    return f"{row.fragmented} GPUs fragmented ({row.fragment_free / MILLI:g} free)"


def _prefix(rows: Sequence[DomainRow], i: int) -> str:
    """Branch drawing: for each ancestor depth, whether more siblings follow."""
    row = rows[i]
    if row.depth == 0:
        return ""
    parts = []
    for depth in range(1, row.depth + 1):
        last = not _more_at_depth(rows, i, depth)
        if depth == row.depth:
            parts.append("└─ " if last else "├─ ")
        else:
            parts.append("   " if last else "│  ")
    return "".join(parts)


def _more_at_depth(rows: Sequence[DomainRow], i: int, depth: int) -> bool:
    """Does a later row at `depth` come before the enclosing subtree ends?"""
    for later in rows[i + 1 :]:
        if later.depth < depth:
            return False
        if later.depth == depth:
            return True
    return False
