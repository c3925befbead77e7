"""`kubectl phalanx topology --png FILE`: the domain tree as a picture.

A layered layout (root on top, leaves spread evenly) computed here, so no Graphviz is
needed; each domain is coloured by its free GPU share.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import networkx as nx

from phalanx.kubectl.topology import DomainRow


def domain_graph(rows: Sequence[DomainRow]) -> nx.DiGraph:
    graph = nx.DiGraph()
    shown = {row.domain for row in rows}
    for row in rows:
        graph.add_node(row.domain, row=row)
        if row.parent in shown:
            graph.add_edge(row.parent, row.domain)
    return graph


def layered_positions(rows: Sequence[DomainRow]) -> dict[int, tuple[float, float]]:
    """Leaves at x = 0, 1, 2, ... in tree order; a parent centred over its children."""
    graph = domain_graph(rows)
    positions: dict[int, tuple[float, float]] = {}
    next_leaf = 0.0
    for row in reversed(rows):  # children come after parents in depth-first order
        children = list(graph.successors(row.domain))
        if children:
            x = sum(positions[c][0] for c in children) / len(children)
        else:
            x = next_leaf
            next_leaf -= 1.0
        positions[row.domain] = (x, -float(row.depth))
    shift = -next_leaf - 1.0
    return {d: (x + shift, y) for d, (x, y) in positions.items()}


def draw_png(rows: Sequence[DomainRow], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    graph = domain_graph(rows)
    positions = layered_positions(rows)
    leaves = sum(1 for d in graph if graph.out_degree(d) == 0)
    depth = max(row.depth for row in rows) + 1
    figure, axes = plt.subplots(figsize=(max(6.0, leaves * 1.1), max(3.0, depth * 1.6)))
    shares = [row.free_gpus / row.gpus if row.gpus else 0.0 for row in rows]
    nx.draw_networkx_edges(graph, positions, ax=axes, arrows=False, edge_color="#999999")
    nodes = nx.draw_networkx_nodes(
        graph,
        positions,
        nodelist=[row.domain for row in rows],
        node_color=shares,
        cmap="RdYlGn",
        vmin=0.0,
        vmax=1.0,
        node_size=900,
        ax=axes,
    )
    labels = {row.domain: f"{row.name}\n{row.free_gpus:g}/{row.gpus:g}" for row in rows}
    nx.draw_networkx_labels(graph, positions, labels=labels, font_size=7, ax=axes)
    figure.colorbar(nodes, ax=axes, label="free GPU share", shrink=0.7)
    axes.set_title(f"{title}: free/total GPUs per domain")
    axes.set_axis_off()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
