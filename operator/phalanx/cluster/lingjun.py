"""Hosts of the Alibaba Lingjun training cluster from its topology CSV (copied into
bench/data/lingjun-topology/).

Each row is `ip,DSW,PSW,ASW`: a host (an anonymised hash) and its core (DSW), aggregation
(PSW) and leaf (ASW) switches. Leaf switch names repeat under different aggregation
switches, so a leaf domain is named by its aggregation switch and leaf switch together.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

COLUMNS = ("ip", "DSW", "PSW", "ASW")
NAME_PREFIX = "lj-"
HASH_CHARS = 12


@dataclass(frozen=True)
class LingjunHost:
    """One host of the CSV with the Kubernetes-safe names of its switch domains."""

    name: str
    core: str
    spine: str
    leaf: str


class LingjunDataMissing(FileNotFoundError):
    """The CSV is not where the description says; it is kept in bench/data/lingjun-topology/."""


def read_lingjun_hosts(path: Path) -> tuple[LingjunHost, ...]:
    """Hosts in file order; fails clearly if the file is absent or malformed."""
    if not path.is_file():
        raise LingjunDataMissing(
            f"Lingjun topology CSV not found at {path}; it is kept in the "
            "repository (bench/data/lingjun-topology/topo.csv, relative to the repository root)"
        )
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return hosts_from_rows(rows, source=str(path))


def hosts_from_rows(rows: list[dict[str, str]], source: str = "<rows>") -> tuple[LingjunHost, ...]:
    """Pure part of the loader: CSV rows -> hosts with unique names."""
    hosts: list[LingjunHost] = []
    seen: set[str] = set()
    for number, row in enumerate(rows, start=2):
        missing = [column for column in COLUMNS if not (row.get(column) or "").strip()]
        if missing:
            raise ValueError(f"{source}:{number}: missing column(s) {', '.join(missing)}")
        ip, core, spine, leaf = (row[column].strip() for column in COLUMNS)
        name = NAME_PREFIX + ip[:HASH_CHARS].lower()
        if name in seen:
            raise ValueError(f"{source}:{number}: host {ip} repeats or its name {name} clashes")
        seen.add(name)
        hosts.append(LingjunHost(name=name, core=core, spine=spine, leaf=f"{spine}-{leaf}"))
    if not hosts:
        raise ValueError(f"{source}: no hosts")
    return tuple(hosts)
