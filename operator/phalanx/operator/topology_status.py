"""Queue allocation and NetworkTopology status, read off the core's snapshot index."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.core.model.names import GroupKey, key_of
from phalanx.core.snapshot.gpus import DomainGpus, domain_gpus
from phalanx.core.snapshot.picture import Snapshot
from phalanx.core.snapshot.resources import charged, format_amount
from phalanx.topology.tree import DomainTree


def allocated_by_queue(snapshot: Snapshot) -> dict[str, dict[str, str]]:
    """Requests of the placed, unfinished pods of each queue's groups, as written."""
    return formatted(allocated_amounts(snapshot))


def formatted(amounts: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, str]]:
    """Queue -> resource -> amount as Queue status shows it (zeros left out)."""
    return {
        queue: {name: format_amount(name, milli) for name, milli in sorted(used.items()) if milli}
        for queue, used in amounts.items()
    }


def allocated_amounts(snapshot: Snapshot) -> dict[str, dict[str, int]]:
    """Requests of the placed, unfinished pods of each queue's groups, in milli-units."""
    index = snapshot.index
    totals: dict[str, dict[str, int]] = {}
    for pod in index.pods:
        if not pod.node_name or pod.finished or pod.group is None:
            continue
        group = index.groups.get(GroupKey(key_of(pod.namespace, pod.group)))
        if group is None:
            continue
        queue = totals.setdefault(group.queue, {})
        for name, amount in charged(pod, index.node_by_name).items():
            queue[name] = queue.get(name, 0) + amount
    return totals


def topology_status(
    snapshot: Snapshot, name: str, hosts: bool = False
) -> dict[str, Any] | None:
    """The domain tree with node and GPU counts (total and free, `phalanx.core.snapshot.gpus`)
    per domain, except a host level (`listed_domains`) unless `hosts` (only for
    `bench.e2e.topology_status_size`, which measures what leaving them out saves)."""
    index = snapshot.index
    if name not in index.topologies:
        return None
    tree = index.tree(name)
    counts = domain_gpus(snapshot, name)
    rows = [_row(tree.level_name(d), tree.name(d), tree.name(tree.parent[d]) or None, counts[d])
            for d in (range(1, tree.size) if hosts else listed_domains(tree))]
    return {
        "levels": len(tree.levels),
        "domains": len(rows),
        "nodes": len(index.nodes),
        "tree": rows,
    }


def listed_domains(tree: DomainTree) -> list[int]:
    """Every domain below the cluster, but not those of a finest level where each domain
    is one node (a host level): such a row only repeats its Node, and the status is
    written after every cycle that places. At 5,000 nodes (bench-5000) host rows were
    5,000 of 5,208, 675 KB of JSON per write against 23 KB without them
    (`python -m bench.e2e.topology_status_size`), and writes timed out while the API server
    was busy; with a host row per node the status alone would pass etcd's 1.5 MiB object
    limit at about 12,500 nodes (1,563 KB compact, `... --nodes 12500`).
    `kubectl phalanx topology --all-levels` still shows hosts."""
    finest = tree.by_level[-1] if tree.by_level else ()
    hosts = set(finest) if finest and all(tree.node_counts[d] == 1 for d in finest) else set()
    return [d for d in range(1, tree.size) if d not in hosts]


def _row(level: str | None, name: str, parent: str | None, counts: DomainGpus) -> dict[str, Any]:
    """One domain; the fragmented GPUs (shared by fractional pods) only where there are."""
    row: dict[str, Any] = {"level": level, "name": name, "parent": parent,
                           "nodes": counts.nodes, "gpus": counts.gpus,
                           "freeGpus": counts.free_gpus}
    if counts.fragmented:
        row["fragmentedGpus"] = counts.fragmented
        row["fragmentedFreeMilli"] = counts.fragment_free
    return row
