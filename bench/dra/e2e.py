"""The DRA side-by-side benchmark: the same gangs of DRA pods on a 200-node kwok cluster,
placed by kube-scheduler 1.36 alone and by Phalanx (binder mode), in one run.

    python -m bench.dra.e2e [--output bench/results/dra-e2e-200.json] [--run-dir DIR]
                            [--kube-scheduler-bin-dir .local/k8s-v1.36.1/bin]
    python -m bench.dra.e2e --render      # the tables again, from the JSON only

The workload (bench/workloads/dra-e2e.yaml) is drawn once; each contender gets it on a fresh
1.37 control plane (etcd, kube-apiserver serving resource.k8s.io/v1, kube-controller-manager
with its resourceclaim controller, kwok) whose 200 nodes offer their GPUs only as
ResourceSlices (examples/clusters/bench-dra-200.yaml). Every pod names a claim made from a
ResourceClaimTemplate (`count` H100s by a CEL selector); Phalanx's pods are in PodGroups
with `required: rack`, kube-scheduler's are the same pods with no group.

kube-scheduler 1.36 runs against the 1.37 API server, not a 1.36 control plane of its own:
the version skew policy supports a kube-scheduler one minor older than kube-apiserver, and
resource.k8s.io/v1 is the same in both; so both contenders share everything but the
scheduler (API server, resourceclaim controller, kwok), and only the scheduler differs.

Measured as bench.e2e's backlog mode (bench/e2e/run.py, whose machinery this reuses):
every template, pod (and PodGroup) is created, and every claim made from the templates by
kube-controller-manager, before the scheduler starts; times run from the scheduler's start
(process launch) to each binding, timed by a watcher in its own process. So the last
binding cannot coincide with the last creation. After the run the claims are read: how
many pods' claims are allocated on their own node, and whether any device is in two claims.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import RESULTS, ROOT, WORKLOADS, write
from bench.dra import e2e_table
from bench.e2e import components, report
from bench.e2e.measure import Endpoint, load_average
from bench.e2e.run import _measure, _versions, log, machine
from bench.e2e.workload import Gang, Workload, draw_gangs, load_workload
from phalanx.cluster import ClusterDescription, LocalCluster, load_description
from phalanx.cluster.dra_slices import API_VERSION, DRIVER, product_name

WORKLOAD = WORKLOADS / "dra-e2e.yaml"
OUTPUT = RESULTS / "dra-e2e-200.json"
KUBE_SCHEDULER_136 = ROOT / ".local" / "k8s-v1.36.1" / "bin"
LINK_136 = ("K8S_VERSION=v1.36.1 PHALANX_BIN_DIR=.local/k8s-v1.36.1/bin bash hack/tools.sh "
            "(links the cached 1.36 binaries; `make test-upstream K8S_VERSION=v1.36.1` does "
            "it too)")
CONTENDERS = ("kube-scheduler", "phalanx")
GROUP_LABEL = "scheduling.phalanx.io/pod-group"
GANG_LABEL = "bench.phalanx.io/gang"
CLAIM = "gpus"


# -- the objects both contenders get ----------------------------------------------------------

def template_name(gpus: int) -> str:
    return f"h100-x{gpus}"


def claim_templates(workload: Workload, gangs: list[Gang], product: str) -> list[dict[str, Any]]:
    """One ResourceClaimTemplate per GPU count the gangs use: `count` devices of the
    driver's class whose productName is `product` (a CEL selector, as a user writes it)."""
    selector = f'device.attributes["{DRIVER}"].productName == "{product}"'
    return [{
        "apiVersion": API_VERSION, "kind": "ResourceClaimTemplate",
        "metadata": {"name": template_name(gpus), "namespace": workload.namespace},
        "spec": {"spec": {"devices": {"requests": [{"name": CLAIM, "exactly": {
            "deviceClassName": DRIVER, "count": gpus,
            "selectors": [{"cel": {"expression": selector}}]}}]}}},
    } for gpus in sorted({g.gpus_per_pod for g in gangs})]


def gang_objects(scheduler: str, workload: Workload, gang: Gang) -> list[dict[str, Any]]:
    """For Phalanx its PodGroup (all or nothing, inside one rack) then its pods; for
    kube-scheduler the same pods, on their own."""
    pods = [_pod(scheduler, workload, gang, name) for name in gang.pod_names()]
    if scheduler != "phalanx":
        return pods
    group = {
        "apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": gang.name, "namespace": workload.namespace},
        "spec": {"minMember": gang.pods, "queue": "default",
                 "topology": {"networkTopology": "default", "required": "rack"}},
    }
    return [group, *pods]


def _pod(scheduler: str, workload: Workload, gang: Gang, name: str) -> dict[str, Any]:
    labels = {"app": "bench-dra", GANG_LABEL: gang.name}
    if scheduler == "phalanx":
        labels[GROUP_LABEL] = gang.name
    requests = {"cpu": str(int(workload.cpu_per_gpu) * gang.gpus_per_pod),
                "memory": f"{int(workload.memory_per_gpu.rstrip('Gi')) * gang.gpus_per_pod}Gi"}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": workload.namespace, "labels": labels},
        "spec": {
            "schedulerName": "phalanx" if scheduler == "phalanx" else "default-scheduler",
            "resourceClaims": [{"name": CLAIM,
                                "resourceClaimTemplateName": template_name(gang.gpus_per_pod)}],
            "containers": [{"name": "worker", "image": "registry.local/bench-worker:1",
                            "resources": {"requests": requests, "claims": [{"name": CLAIM}]}}],
        },
    }


# -- one contender ----------------------------------------------------------------------------

def run_one(scheduler: str, description: ClusterDescription, gangs: list[Gang],
            workload: Workload, run_dir: Path, kube_scheduler: Path) -> dict[str, Any]:
    """A fresh cluster with kube-controller-manager (its resourceclaim controller makes the
    claims); the backlog submitted and its claims made; the scheduler started; every
    binding awaited; then the claims read."""
    tag = f"[{scheduler}]"
    result: dict[str, Any] = {"scheduler": scheduler, "mode": "backlog",
                              "pods": sum(g.pods for g in gangs), "gangs": len(gangs),
                              "load_average_start": load_average()}
    cluster = LocalCluster(run_dir, controller_manager=True)
    cluster.start()
    try:
        started = time.time()
        cluster.prepare(description, timeout=300.0)
        result["nodes_ready_s"] = round(time.time() - started, 1)
        log(f"{tag} {len(description.hosts)} DRA nodes Ready in {result['nodes_ready_s']}s")
        account = components.OPERATOR if scheduler == "phalanx" else components.SCHEDULER
        cluster.apply(components.identity_objects([account], workload.namespace))
        cluster.apply(claim_templates(workload, gangs, product_name(description.shape)))
        kubeconfig = components.account_kubeconfig(cluster, account)
        endpoint = Endpoint(cluster.server, cluster.token, str(cluster.ca_cert))

        def start() -> int:
            if scheduler == "phalanx":
                return components.start_operator(cluster, kubeconfig, None)
            return components.start_kube_scheduler(
                cluster, kubeconfig, workload.scheduler_qps, workload.scheduler_burst,
                binary=kube_scheduler)

        result.update(_measure(
            cluster, scheduler, account, start, gangs, workload, tag, "backlog", 0,
            objects_of=lambda gang: gang_objects(scheduler, workload, gang),
            before_start=lambda: _await_claims(endpoint, workload, result["pods"], tag)))
        result["claims"] = claim_check(endpoint, workload.namespace)
        log(f"{tag} claims: {result['claims']}")
        components.stop_component(cluster, account)
    finally:
        cluster.stop()
    result["load_average_end"] = load_average()
    return result


def _await_claims(endpoint: Endpoint, workload: Workload, count: int, tag: str,
                  timeout: float = 300.0) -> None:
    """Until kube-controller-manager has made every pod's claim from its template: the
    scheduler then starts on the whole backlog, as in bench.e2e."""
    path = f"/apis/{API_VERSION}/namespaces/{workload.namespace}/resourceclaims"
    began = time.time()
    while time.time() - began < timeout:
        made = len(endpoint.list_items(path)["items"])
        if made >= count:
            log(f"{tag} {made} claims made from templates in {time.time() - began:.1f}s")
            return
        time.sleep(1.0)
    raise RuntimeError(f"kube-controller-manager made {made} of {count} claims in {timeout:.0f}s")


def claim_check(endpoint: Endpoint, namespace: str) -> dict[str, int]:
    """After the run: claims allocated, pods whose claim is allocated on the node they are
    bound to (and reserved for them), and devices found in more than one claim."""
    claims = endpoint.list_items(f"/apis/{API_VERSION}/namespaces/{namespace}/resourceclaims")
    pods = endpoint.list_items(f"/api/v1/namespaces/{namespace}/pods")["items"]
    node_of = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}
    held: Counter[tuple[str, str, str]] = Counter()
    allocated = on_own_node = 0
    for claim in claims["items"]:
        status = claim.get("status") or {}
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        if not results:
            continue
        allocated += 1
        held.update((r["driver"], r["pool"], r["device"]) for r in results)
        users = [r["name"] for r in status.get("reservedFor") or []]
        pools = {r["pool"] for r in results}  # one pool per node, named after it
        if len(users) == 1 and node_of.get(users[0]) and pools == {node_of[users[0]]}:
            on_own_node += 1
    return {"claims": len(claims["items"]), "allocated": allocated,
            "pods_bound": sum(1 for node in node_of.values() if node),
            "allocated_on_the_pods_node": on_own_node,
            "devices_in_two_claims": sum(1 for n in held.values() if n > 1)}


# -- the run ----------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.dra.e2e",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--workload", type=Path, default=WORKLOAD)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--run-dir", type=Path, default=None)
    parser.add_argument("--kube-scheduler-bin-dir", type=Path, default=KUBE_SCHEDULER_136,
                        help="where kube-scheduler 1.36 is (default .local/k8s-v1.36.1/bin)")
    parser.add_argument("--only", choices=CONTENDERS, action="append", default=None)
    parser.add_argument("--render", action="store_true",
                        help="only rewrite the tables from bench/results/dra-e2e-200.json")
    args = parser.parse_args(argv)
    if args.render:
        for path in write([e2e_table.generated()]):
            log(f"tables written to {path}")
        return 0
    kube_scheduler = args.kube_scheduler_bin_dir / "kube-scheduler"
    if not os.access(kube_scheduler, os.X_OK):
        raise SystemExit(f"no kube-scheduler at {kube_scheduler}: {LINK_136}")
    workload = load_workload(args.workload)
    description = load_description(ROOT / workload.cluster)
    gangs = draw_gangs(workload, description.gpus)
    run_root = args.run_dir or Path(tempfile.mkdtemp(prefix="bench-dra-e2e-"))
    params = {**workload.to_json(), "nodes": len(description.hosts),
              "gpus_per_node": description.shape.gpus, "cluster_gpus": description.gpus,
              "pods": sum(g.pods for g in gangs), "gpus": sum(g.gpus for g in gangs),
              "gangs_by_pods": _counts(g.pods for g in gangs),
              "gangs_by_gpus_per_pod": _counts(g.gpus_per_pod for g in gangs)}
    log(f"{params['nodes']} DRA nodes x {params['gpus_per_node']} GPUs; {len(gangs)} gangs, "
        f"{params['pods']} pods, {params['gpus']} GPUs; runs in {run_root}")
    started_at, began, load_start = datetime.now(UTC), time.time(), load_average()
    runs = {}
    for scheduler in args.only or CONTENDERS:
        runs[scheduler] = run_one(scheduler, description, gangs, workload,
                                  run_root / scheduler, kube_scheduler)
        log(f"[{scheduler}] " + ", ".join(f"{k} {v}" for k, v in
                                          report.headline(runs[scheduler]).items()))
    versions = _versions()
    versions["kube_scheduler"] = _first_line([str(kube_scheduler), "--version"])
    results: dict[str, Any] = {
        "command": "python -m bench.dra.e2e " + shlex.join(argv if argv is not None
                                                         else sys.argv[1:]),
        "started_at": started_at.isoformat(timespec="seconds"),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.time() - began, 1),
        "machine": machine(load_start),
        "versions": versions,
        "parameters": params,
        "how": (__doc__ or "").split("Measured as", 1)[-1].strip(),
        "runs": runs,
        "headline": {name: e2e_table.headline(run) for name, run in runs.items()},
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=1) + "\n")
    log(f"results in {args.output} ({results['duration_s'] / 60:.1f} min)")
    if args.output.resolve() == OUTPUT and not args.only:
        for path in write([e2e_table.generated()]):
            log(f"tables written to {path}")
    else:
        print(e2e_table.readme_block(results))
    return 1 if runs.get("phalanx", {}).get("timed_out") else 0


def _counts(values: Iterable[int]) -> dict[str, int]:
    return {str(k): v for k, v in sorted(Counter(values).items())}


def _first_line(argv: list[str]) -> str:
    import subprocess

    out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    return (out.stdout or out.stderr).strip().splitlines()[0]


if __name__ == "__main__":
    raise SystemExit(main())
