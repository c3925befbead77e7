"""How long the operator takes to have bench-5000's pods in its cache: a LIST in pages against
a streamed list (WatchList), on the real control plane.

    python -m bench.e2e.stream_list [--workload bench/workloads/e2e-5000.yaml] [--rounds 3]

A fresh local cluster (the benchmark's settings), its kwok nodes, and the workload's
PodGroups and pending pods created as `bench.e2e` creates them for a backlog; then, in
alternation, the operator's own pod watcher (`RawWatch` over `ApiListWatch`, the operator's
API client, the cache parsing each page or batch as it arrives and the heap frozen after it,
as `Operator` wires them) takes the pods' state by a LIST in pages, or by a stream, until
its store is filled (`listed`). Printed per try: wall seconds, this process's CPU seconds and
kube-apiserver's. The first try of a fresh cluster is slower for both (the API server has
just stored the pods): compare tries of the same round, and rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import time
from pathlib import Path

from bench.common import ROOT, WORKLOADS
from bench.e2e.components import OPERATOR, account_kubeconfig, identity_objects
from bench.e2e.measure import Endpoint
from bench.e2e.run import _objects_for, _rack_gpus, _warm_custom_storage
from bench.e2e.submit import submit
from bench.e2e.workload import draw_gangs, load_workload, submission_waves
from phalanx.cluster import LocalCluster, load_description
from phalanx.observe.frozen_heap import FrozenHeap
from phalanx.operator.cache import ClusterCache, Kind
from phalanx.operator.kube.client import api_client, load_configuration
from phalanx.operator.kube.raw_watch import ApiListWatch, RawWatch


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def take_state(kubeconfig: str, streaming: bool) -> int:
    """The operator's pod watcher until its store holds the pods' state; how many."""
    configuration = await load_configuration(kubeconfig)
    client = api_client(configuration)
    cache, heap = ClusterCache({}), FrozenHeap(time.monotonic)
    watch = RawWatch(ApiListWatch(client), lambda: None, streaming=streaming)

    def parsed(bodies: object) -> None:
        cache.warm(Kind.POD, bodies)  # type: ignore[arg-type]
        heap.keep()

    watch.on_listed = parsed
    task = asyncio.create_task(watch.run())
    try:
        await asyncio.wait_for(watch.listed.wait(), timeout=300)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await client.close()
        heap.thaw()
    return len(watch.store)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workload", type=Path, default=WORKLOADS / "e2e-5000.yaml")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--run-dir", type=Path, default=Path("/tmp/phalanx-stream-list"))
    args = parser.parse_args(argv)
    workload = load_workload(args.workload)
    description = load_description(ROOT / workload.cluster)
    gangs = draw_gangs(workload, description.gpus)
    cluster = LocalCluster(args.run_dir, controller_manager=False, large=workload.large_cluster,
                           kwok_lease_seconds=workload.kwok_lease_seconds)
    cluster.start()
    try:
        cluster.prepare(description, timeout=600.0)
        cluster.apply(identity_objects([OPERATOR], workload.namespace))
        _warm_custom_storage(cluster)
        endpoint = Endpoint(cluster.server, cluster.token, str(cluster.ca_cert))
        objects = _objects_for("phalanx", workload, _rack_gpus(description))
        asyncio.run(submit(endpoint, submission_waves(gangs), objects, workload.concurrency,
                           lambda count: None))
        kubeconfig = str(account_kubeconfig(cluster, OPERATOR))
        server = cluster.pids()["kube-apiserver"]
        print(f"{sum(g.pods for g in gangs)} pods on {len(description.hosts)} nodes", flush=True)
        for number in range(1, args.rounds + 1):
            for streaming in (False, True):
                began, cpu, served = time.perf_counter(), time.process_time(), cpu_seconds(server)
                count = asyncio.run(take_state(kubeconfig, streaming))
                print(f"round {number} {'stream' if streaming else 'LIST  '}: {count} pods, "
                      f"{time.perf_counter() - began:.2f} s wall, "
                      f"{time.process_time() - cpu:.2f} s CPU here, "
                      f"{cpu_seconds(server) - served:.2f} s kube-apiserver CPU", flush=True)
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
