"""Size of a NetworkTopology's status at a cluster's scale, with and without host rows.

    python -m bench.e2e.topology_status_size [--cluster examples/clusters/bench-5000.yaml]
                                         [--nodes N]

The operator writes the status (`phalanx.operator.topology_status`) after every cycle
that places, so its size is paid on each write. Printed for the cluster description's
nodes, empty (a row's counts have as many digits empty as full at 8 GPUs a node): the
rows and bytes of the status as the operator writes it (host level left out, see
`listed_domains`) and as it would be with a row per host, in the JSON of the status
patch as sent (`json.dumps` defaults) and compact (as the API server stores it).
`--nodes` lays out that many nodes shaped like the cluster's (as `bench.e2e --nodes`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.common import ROOT
from bench.e2e.workload import layout_description
from phalanx.cluster.description import load_description, network_topology, node_objects
from phalanx.core.parse.objects import snapshot_from_objects
from phalanx.operator.topology_status import topology_status

CLUSTER = ROOT / "examples" / "clusters" / "bench-5000.yaml"


def sizes(status: dict[str, Any]) -> tuple[int, int]:
    """Bytes of the status patch as sent and compact."""
    body = {"status": status}
    return len(json.dumps(body).encode()), len(json.dumps(body, separators=(",", ":")).encode())


def measure(cluster: Path, nodes: int | None = None) -> list[str]:
    description = load_description(cluster)
    if nodes:
        description = layout_description(nodes, description)
    snapshot = snapshot_from_objects(
        [*node_objects(description), network_topology(description)], strict=True)
    written = topology_status(snapshot, "default")
    with_hosts = topology_status(snapshot, "default", hosts=True)
    assert written is not None and with_hosts is not None
    lines = [f"{cluster.name}: {len(snapshot.nodes)} nodes"]
    for label, status in (("as written (no host rows)", written), ("a row per host", with_hosts)):
        sent, compact = sizes(status)
        lines.append(f"{label:<26} {status['domains']:6d} rows {sent / 1000:8.1f} KB sent "
                     f"{compact / 1000:8.1f} KB compact")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cluster", type=Path, default=CLUSTER)
    parser.add_argument("--nodes", type=int, default=None)
    args = parser.parse_args(argv)
    for line in measure(args.cluster, args.nodes):
        print(line)


if __name__ == "__main__":
    main()
