"""End-to-end benchmark on the real control plane: Phalanx (binder mode) vs kube-scheduler.

    python -m bench.e2e [--nodes 1000] [--gangs 500] [--smoke] [--profile]
                        [--only phalanx|kube-scheduler|kube-scheduler-gang|ceiling]
                        [--output bench/results/e2e.json]
    python -m bench.e2e --render      # rewrite the tables from the JSON only

One invocation runs the workload of bench/workloads/e2e.yaml twice, each time on a fresh
local cluster (etcd + kube-apiserver + kwok nodes): once placed by the Phalanx operator
(`python -m phalanx operator --mode binder`, pods in PodGroups), once by the real
kube-scheduler (the same pods with schedulerName default-scheduler, no group). Each
scheduler is started, and ready, before the first object is submitted. In backlog mode a
fourth contender, the ceiling (bench/e2e/ceiling.py), binds the same pods with the
operator's client settings and a plan made before the clock starts: the API server's own
bind rate, of which Phalanx's is read as a share.

Measured per run:
- bind time of a pod: when kube-apiserver answered its binding (stageTimestamp of its
  audit line: the cluster audits pods/binding creates only, bench/e2e/server_times.py), the
  same for every contender; a watcher in its own process, started before submission, sees
  each binding as its watch event arrives (the run's progress; its lag behind the server
  is reported as watch_lag_s, and its time stands in for a pod the audit log lacks);
- throughput: pods bound / (last binding - submission start);
- gang latency: last binding of the gang's pods - when the gang's first object was sent;
- scheduler process: CPU seconds (utime + stime, /proc/<pid>/stat) from submission start
  to the end of the settle period, peak RSS (VmHWM, /proc/<pid>/status), sampled every
  second and read once more before the process is stopped;
- API requests: the scheduler runs as its own ServiceAccount, classified by a FlowSchema
  of its own, so the delta of kube-apiserver's
  `apiserver_flowcontrol_dispatched_requests_total{flow_schema=...}` between submission
  start and the end of the settle period is exactly its requests. The delta of
  `apiserver_request_total` (all clients: kwok, the watcher, the submission) is reported
  besides, with the submission's own requests subtracted.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import multiprocessing
import os
import platform
import queue
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import RESULTS, ROOT, WORKLOADS, write
from bench.e2e import components, report, table
from bench.e2e.ceiling_plan import first_fit
from bench.e2e.measure import (
    Endpoint,
    ProcessReading,
    load_average,
    read_process,
    watch_bindings,
)
from bench.e2e.server_times import read_binding_times, watch_lag
from bench.e2e.submit import submit
from bench.e2e.workload import (
    Gang,
    Workload,
    draw_gangs,
    layout_description,
    load_workload,
    pod_group_object,
    pod_object,
    submission_waves,
    upstream_pod_group_object,
)
from bench.e2e.written import cycle_seconds, written_objects
from phalanx.cluster import ClusterDescription, LocalCluster, binaries, load_description
from phalanx.cluster.components import AUDIT_LOG_FILE

WORKLOAD = WORKLOADS / "e2e.yaml"
OUTPUT = RESULTS / "e2e.json"
KUBE_GANG = "kube-scheduler-gang"
# The API server's own bind rate: the same pods bound with the operator's client settings
# and a plan made before the clock starts (bench/e2e/ceiling.py). Backlog mode only: in
# arrival mode every pod would be bound as soon as it exists, the submission's pace.
CEILING = "ceiling"
CEILING_SCHEDULER_NAME = "bench-ceiling"  # no scheduler runs under it: the pods wait for the plan
SCHEDULERS = ("phalanx", "kube-scheduler", KUBE_GANG, CEILING)
MODES = ("arrival", "backlog")
# --smoke (in `make test`) stays short: every contender once, in backlog mode, and Phalanx
# in arrival mode too.
SMOKE_PLAN = {"arrival": ["phalanx"], "backlog": list(SCHEDULERS)}
# A gang whose first and last bindings lie further apart than this was seen partly bound
# (some pods on nodes, holding GPUs, while others were not): pods of one gang bound in one
# go land within a fraction of a second of each other.
PARTIAL_SECONDS = 2.0
# Run to run, kube-scheduler's throughput on this 2-core machine varied by a fifth: one
# pair of runs cannot carry a ratio. Each round runs both, alternating, on fresh clusters.
ROUNDS = 3
PROGRESS_SECONDS = 5.0


def log(message: str) -> None:
    print(f"[bench.e2e {time.strftime('%H:%M:%S')}] {message}", flush=True)


# -- sampling processes -----------------------------------------------------------------------

class Sampler:
    """Reads CPU and memory of the given processes every second, in a thread."""

    def __init__(self, pids: dict[str, int], component: str) -> None:
        self.pids = pids
        self.component = component
        self.last: dict[str, ProcessReading] = {}
        self.samples: list[tuple[float, float, float]] = []  # component: (time, cpu, rss)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def read(self) -> dict[str, ProcessReading]:
        for name, pid in self.pids.items():
            reading = read_process(pid)
            if reading is not None:
                self.last[name] = reading
        return dict(self.last)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            readings = self.read()
            own = readings.get(self.component)
            if own is not None:
                self.samples.append((time.time(), own.cpu_seconds, own.rss_mib))
            self._stop.wait(1.0)


class Bindings:
    """Drains the watcher's queue in a thread: pod name -> ("watch" | "list", time seen),
    and the watch's breaks: (time, reason, whether it broke while resuming)."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.bound: dict[str, tuple[str, float]] = {}
        self.breaks: list[tuple[float, str, bool]] = []
        self.ready = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                item = self.source.get(timeout=0.2)
            except queue.Empty:
                continue
            if item == ("ready",):
                self.ready.set()
            elif item[0] == "break":
                self.breaks.append(item[1:])
            else:
                name, source, moment = item
                self.bound[name] = (source, moment)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


# -- one run ----------------------------------------------------------------------------------

def run_one(scheduler: str, description: ClusterDescription, gangs: list[Gang],
            workload: Workload, run_dir: Path, profile: bool,
            mode: str = "arrival") -> dict[str, Any]:
    """Fresh cluster; in arrival mode the scheduler is started (and ready) before the
    workload is submitted, in backlog mode after every object exists; every binding is
    awaited."""
    tag = f"[{scheduler} {mode}]"
    pods_total = sum(g.pods for g in gangs)
    result: dict[str, Any] = {"scheduler": scheduler, "mode": mode, "pods": pods_total,
                              "gangs": len(gangs), "load_average_start": load_average()}
    # kube-controller-manager is left out: none of its controllers acts on these pods,
    # and at 20,000 pods its informers would take CPU from every contender alike.
    cluster = LocalCluster(run_dir, workload_api=scheduler == KUBE_GANG,
                           controller_manager=False, audit_bindings=True,
                           large=workload.large_cluster,
                           kwok_lease_seconds=workload.kwok_lease_seconds)
    began = time.time()
    cluster.start()
    try:
        log(f"{tag} control plane up in {time.time() - began:.1f}s; creating "
            f"{len(description.hosts)} nodes")
        nodes_from = time.time()
        cluster.prepare(description, timeout=600.0)
        result["nodes_ready_s"] = round(time.time() - nodes_from, 1)
        log(f"{tag} {len(description.hosts)} nodes Ready in {result['nodes_ready_s']}s")
        account = {"phalanx": components.OPERATOR,
                   CEILING: components.CEILING}.get(scheduler, components.SCHEDULER)
        cluster.apply(components.identity_objects([account], workload.namespace))
        _warm_custom_storage(cluster)
        kubeconfig = components.account_kubeconfig(cluster, account)
        profile_path = run_dir / "operator.prof" if profile and scheduler == "phalanx" else None
        rack_gpus = _rack_gpus(description)
        plan = _ceiling_plan(description, gangs, workload, rack_gpus, run_dir) \
            if scheduler == CEILING else None

        def start() -> int:
            component_from = time.time()
            if scheduler == "phalanx":
                pid = components.start_operator(cluster, kubeconfig, profile_path)
            elif plan is not None:
                pid = components.start_ceiling(cluster, kubeconfig, plan)
            else:
                pid = components.start_kube_scheduler(cluster, kubeconfig,
                                                      workload.scheduler_qps,
                                                      workload.scheduler_burst)
            result["component_ready_s"] = round(time.time() - component_from, 1)
            log(f"{tag} {account} ready in {result['component_ready_s']}s (pid {pid})")
            return pid

        result.update(_measure(cluster, scheduler, account, start, gangs, workload, tag, mode,
                               rack_gpus))
        components.stop_component(cluster, account)
        if profile_path is not None:
            result["profile"] = str(profile_path)
    finally:
        cluster.stop()
    result["load_average_end"] = load_average()
    return result


# A fresh kube-apiserver readies a custom resource's storage at the first request for it,
# answering 429 "storage is (re)initializing" meanwhile: the operator's first list of
# Queues (which nothing else had asked for) waited a second of its run for that. A live
# cluster has them ready; each is asked for once before any clock starts.
CUSTOM_KINDS = ("queues", "podgroups", "networktopologies")


def _warm_custom_storage(cluster: LocalCluster, timeout: float = 60.0) -> None:
    rest = cluster.rest(timeout=30.0)
    for kind in CUSTOM_KINDS:
        deadline = time.monotonic() + timeout
        while rest.get(f"/apis/scheduling.phalanx.io/v1alpha1/{kind}?limit=1").status != 200:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the API server did not serve {kind} within {timeout:.0f}s")
            time.sleep(0.2)


def _ceiling_plan(description: ClusterDescription, gangs: list[Gang], workload: Workload,
                  rack_gpus: int, run_dir: Path) -> Path:
    """The ceiling's bindings (first-fit, in creation order), written before its clock
    starts; the file it is started with."""
    objects = _objects_for(CEILING, workload, rack_gpus)
    pods = [body for wave in submission_waves(gangs) for gang in wave
            for body in objects(gang) if body["kind"] == "Pod"]
    plan = first_fit(pods, [host.name for host in description.hosts], description.shape)
    path = run_dir / "ceiling-plan.json"
    path.write_text(json.dumps([binding.to_json() for binding in plan]))
    return path


def _rack_gpus(description: ClusterDescription) -> int:
    """GPUs of the largest rack (the second-finest level; the whole cluster if none)."""
    racks = Counter(host.domains[:-1] if len(host.domains) > 1 else () for host in
                    description.hosts)
    return max(racks.values(), default=0) * description.shape.gpus


def _measure(cluster: LocalCluster, scheduler: str, account: str, start: Callable[[], int],
             gangs: list[Gang], workload: Workload, tag: str, mode: str,
             rack_gpus: int, objects_of: Callable[[Gang], list[dict[str, Any]]] | None = None,
             before_start: Callable[[], None] | None = None) -> dict[str, Any]:
    """One run's readings. `objects_of`: each gang's objects (default: this benchmark's for
    `scheduler`); `before_start`: called in backlog mode once everything is submitted and
    before the scheduler starts (bench.dra.e2e waits there for the claims that
    kube-controller-manager makes from templates)."""
    endpoint = Endpoint(cluster.server, cluster.token, str(cluster.ca_cert))
    pods_total = sum(g.pods for g in gangs)
    context = multiprocessing.get_context("spawn")
    channel = context.Queue()
    watcher = context.Process(target=watch_bindings, args=(endpoint, workload.namespace, channel),
                              daemon=True)
    watcher.start()
    bindings = Bindings(channel)
    sampler = Sampler(cluster.pids(), account)
    try:
        if not bindings.ready.wait(60):
            raise RuntimeError("the binding watcher did not start")
        submitted = {"gangs": 0}

        def on_gang(count: int) -> None:
            submitted["gangs"] = count

        objects = objects_of or _objects_for(scheduler, workload, rack_gpus)
        if mode == "arrival":
            sampler.pids[account] = start()
            time.sleep(3.0)  # informers listed and idle
        else:
            submission = asyncio.run(submit(endpoint, submission_waves(gangs), objects,
                                            workload.concurrency, on_gang))
            log(f"{tag} backlog of {len(gangs)} gangs created ({submission.requests} "
                f"requests) in {submission.finished - submission.started:.1f}s")
            if before_start is not None:
                before_start()
        before_readings = sampler.read()
        before = endpoint.scrape()
        stop_progress = threading.Event()
        started = time.time()
        printer = threading.Thread(target=_progress, daemon=True, args=(
            tag, started, len(gangs), pods_total, submitted, bindings, sampler, account,
            stop_progress))
        printer.start()
        if mode == "arrival":
            sampler.start()
            submission = asyncio.run(submit(endpoint, submission_waves(gangs), objects,
                                            workload.concurrency, on_gang))
            log(f"{tag} submitted {len(gangs)} gangs ({submission.requests} requests) in "
                f"{submission.finished - submission.started:.1f}s")
            measured_from = submission.started
            sent = dict(submission.first_sent)
        else:
            sampler.pids[account] = start()  # its CPU is counted from zero: it just started
            before_readings = {**before_readings, **sampler.read()}
            sampler.start()
            measured_from = started
            sent = dict.fromkeys((g.name for g in gangs), started)
        deadline = measured_from + workload.timeout_seconds
        progress, progress_at = -1, time.time()
        while len(bindings.bound) < pods_total and time.time() < deadline:
            if len(bindings.bound) != progress:
                progress, progress_at = len(bindings.bound), time.time()
            elif progress > 0 and time.time() - progress_at > workload.stall_seconds:
                log(f"{tag} no binding for {workload.stall_seconds:.0f}s: stalled")
                break
            time.sleep(0.2)
        timed_out = len(bindings.bound) < pods_total
        at_last = endpoint.scrape()
        time.sleep(workload.settle_seconds)
        after = endpoint.scrape()
        end_readings = sampler.read()
        stop_progress.set()
        sampler.stop()
        bound = dict(bindings.bound)
        pods_listing = endpoint.list_items(f"/api/v1/namespaces/{workload.namespace}/pods")
        written = (written_objects(endpoint.list_items, workload.namespace)
                   if scheduler == "phalanx" else None)
    finally:
        bindings.stop()
        watcher.terminate()
        watcher.join(10)
    if timed_out:
        log(f"{tag} NOT ALL BOUND: {len(bound)} of {pods_total} pods bound (stalled for "
            f"{workload.stall_seconds:.0f}s or past {workload.timeout_seconds:.0f}s)")
    if mode == "backlog":
        before_readings[account] = ProcessReading(0.0, 0.0, 0.0)
    window = Window(measured_from, sent, before, at_last, after, before_readings, end_readings)
    figures = _figures(scheduler, account, gangs, submission, bound, pods_listing, window,
                       sampler, timed_out, cluster, workload.namespace, rack_gpus)
    if written is not None:
        figures["operator"] = {"written_objects": written, "cycle_seconds": cycle_seconds(
            cluster.run_dir / "logs" / f"{components.OPERATOR}.log")}
    figures["watch_breaks"] = [{"at_s": round(at - measured_from, 2), "reason": reason[:200],
                                "while_resuming": resuming}
                               for at, reason, resuming in bindings.breaks]
    return figures


def _objects_for(scheduler: str, workload: Workload,
                 rack_gpus: int) -> Callable[[Gang], list[dict[str, Any]]]:
    name = {"phalanx": "phalanx", CEILING: CEILING_SCHEDULER_NAME}.get(scheduler,
                                                                     "default-scheduler")
    upstream = scheduler == KUBE_GANG

    def objects(gang: Gang) -> list[dict[str, Any]]:
        pods = [pod_object(workload, gang, pod, name, upstream) for pod in gang.pod_names()]
        if scheduler == "phalanx":
            return [pod_group_object(workload, gang), *pods]
        if upstream:
            return [upstream_pod_group_object(workload, gang, rack_gpus), *pods]
        return pods

    return objects


def _progress(tag: str, started: float, gangs: int, pods: int, submitted: dict[str, int],
              bindings: Bindings, sampler: Sampler, account: str, stop: threading.Event) -> None:
    previous, previous_at = 0, started
    while not stop.wait(PROGRESS_SECONDS):
        now, count = time.time(), len(bindings.bound)
        own = sampler.last.get(account)
        usage = f"; {account} cpu {own.cpu_seconds:.1f}s rss {own.rss_mib:.0f} MiB" if own else ""
        log(f"{tag} t+{now - started:5.1f}s gangs submitted {submitted['gangs']}/{gangs}, "
            f"pods bound {count}/{pods} ({(count - previous) / (now - previous_at):.0f}/s)"
            f"{usage}; load {os.getloadavg()[0]:.1f}")
        previous, previous_at = count, now


@dataclasses.dataclass(frozen=True)
class Window:
    """What a run is measured against: `started` (submission start in arrival mode, the
    scheduler's start in backlog mode), when each gang counts as submitted, and the
    metrics and process readings at its start, at the last binding and after settling."""

    started: float
    sent: dict[str, float]
    before: dict[str, Any]
    at_last: dict[str, Any]
    after: dict[str, Any]
    start: dict[str, ProcessReading]
    end: dict[str, ProcessReading]


def _figures(scheduler: str, account: str, gangs: list[Gang], submission: Any,
             bound: dict[str, tuple[str, float]], listing: dict[str, Any], measured: Window,
             sampler: Sampler, timed_out: bool, cluster: LocalCluster,
             namespace: str, rack_gpus: int) -> dict[str, Any]:
    seen_at, late = bind_times(bound, listing)
    answered = read_binding_times(cluster.run_dir / "logs" / AUDIT_LOG_FILE,
                                  namespace)
    bound_at = {name: answered.get(name, moment) for name, moment in seen_at.items()}
    members = {g.name: g.pod_names() for g in gangs}
    sizes = {g.name: g.pods for g in gangs}
    latencies = report.gang_latencies(members, bound_at, measured.sent)
    from_start = report.gang_latencies(members, bound_at, dict.fromkeys(members,
                                                                        measured.started))
    flow = components.flow_schema_name(account)
    window = report_delta(measured.before, measured.after)
    until_last = report_delta(measured.before, measured.at_last)
    # in backlog mode the submission ended before the window opened
    submission_requests = submission.requests if submission.started >= measured.started else 0
    pods_bound = len(bound_at)
    node_of = {item["metadata"]["name"]: item["spec"].get("nodeName")
               for item in listing["items"] if item["spec"].get("nodeName")}
    rack_of = _racks(cluster)
    start, end = measured.start, measured.end
    component_start, component_end = start.get(account), end.get(account)
    processes = {
        name: {"cpu": round(end[name].cpu_seconds - start[name].cpu_seconds, 2)
               if name in start else None, "peak_rss_mib": round(end[name].peak_rss_mib, 1)}
        for name in end
    }
    return {
        "timed_out": timed_out,
        "bind_time_sources": {"api_server_audit": sum(1 for n in seen_at if n in answered),
                              "watch_event": len(bound) - len(late), "relist": len(late),
                              "relist_replaced_by_pod_scheduled_condition": sum(late.values())},
        "watch_lag_s": watch_lag(seen_at, answered),
        "submission": {"seconds": round(submission.finished - submission.started, 3),
                       "requests": submission.requests, "retries": submission.retries,
                       "started_epoch": submission.started},
        "measured_from_epoch": measured.started,
        "throughput": report.throughput(bound_at, measured.started),
        "partial_gangs": report.partial_gangs(members, bound_at, PARTIAL_SECONDS),
        "binding_spread_by_pods": report.binding_spreads(members, bound_at, PARTIAL_SECONDS),
        "spread_gangs": report.spread_gangs(members, bound_at, PARTIAL_SECONDS,
                                            measured.started),
        "gangs_fully_bound": len(latencies),
        "gang_latency_s": report.latency_summary(latencies, sizes),
        "gang_latency_from_submission_start_s": report.latency_summary(from_start, sizes)["all"],
        "bound_cumulative_per_second": report.bound_timeline(bound_at, measured.started),
        "api_requests": {
            "component_flow_schema": flow,
            "component": window["by_flow"].get(flow, 0),
            "component_per_bound_pod": round(window["by_flow"].get(flow, 0) / pods_bound, 3)
            if pods_bound else None,
            "component_until_last_binding": until_last["by_flow"].get(flow, 0),
            "all_clients": window["total"],
            "all_clients_excluding_submission": window["total"] - submission_requests,
            "all_clients_per_bound_pod": round((window["total"] - submission_requests)
                                               / pods_bound, 3) if pods_bound else None,
            "by_flow_schema": window["by_flow"],
            "by_call_all_clients": window["by_call"],
        },
        "component": {
            "name": account,
            "cpu_seconds_window": round(component_end.cpu_seconds - component_start.cpu_seconds,
                                        2) if component_start and component_end else None,
            "cpu_seconds_total": round(component_end.cpu_seconds, 2) if component_end else None,
            "peak_rss_mib": round(component_end.peak_rss_mib, 1) if component_end else None,
            "rss_mib_end": round(component_end.rss_mib, 1) if component_end else None,
            "samples": [(round(t - measured.started, 1), round(c, 2), round(r, 1))
                        for t, c, r in sampler.samples],
        },
        "processes": processes,
        "locality": report.locality(members, node_of, rack_of,
                                    {g.name: g.gpus <= rack_gpus for g in gangs}),
    }


def bind_times(bound: dict[str, tuple[str, float]], listing: dict[str, Any]
               ) -> tuple[dict[str, float], dict[str, bool]]:
    """Bind time per pod: the watch event's arrival; for a pod first seen in a re-list (the
    watch had broken) the earlier of the re-list time and the middle of the second of its
    PodScheduled condition's lastTransitionTime (1 s resolution).

    Returns the times and, for re-listed pods, whether the condition's time was used."""
    scheduled = {item["metadata"]["name"]: _scheduled_time(item) for item in listing["items"]}
    times, late = {}, {}
    for name, (source, moment) in bound.items():
        times[name] = moment
        if source == "list":
            condition = scheduled.get(name)
            late[name] = condition is not None and condition + 0.5 < moment
            if late[name] and condition is not None:
                times[name] = condition + 0.5
    return times, late


def _scheduled_time(pod: dict[str, Any]) -> float | None:
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "True":
            stamp = str(condition.get("lastTransitionTime") or "")
            if stamp:
                return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    return None


def report_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    from bench.e2e.measure import count_delta

    return count_delta(before, after)


def _racks(cluster: LocalCluster) -> dict[str, str]:
    nodes = cluster.rest(timeout=60.0).get("/api/v1/nodes").body["items"]
    return {n["metadata"]["name"]: n["metadata"].get("labels", {}).get(
        "network.topology.nvidia.com/leaf", n["metadata"]["name"]) for n in nodes}


# -- the whole benchmark ----------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.e2e", description=__doc__.split("\n")[0])
    parser.add_argument("--workload", type=Path, default=WORKLOAD)
    parser.add_argument("--nodes", type=int, default=None,
                        help="cluster size (default: the workload's cluster file)")
    parser.add_argument("--gangs", type=int, default=None)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny run (the workload's smoke sizes) into a temporary folder")
    parser.add_argument("--only", choices=SCHEDULERS, action="append", default=None)
    parser.add_argument("--mode", dest="modes", choices=MODES, action="append", default=None,
                        help="arrival (submitted while the scheduler runs) and/or backlog "
                             "(everything exists before it starts); default both")
    parser.add_argument("--rounds", type=int, default=None,
                        help="rounds of (Phalanx, kube-scheduler) runs, each on fresh clusters "
                             f"(default {ROUNDS}; 1 with --smoke or --only)")
    parser.add_argument("--profile", action="store_true",
                        help="run the operator under cProfile (its .prof is kept and summarized)")
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--add", action="store_true",
                        help="keep the modes already in --output that this run does not rerun "
                             "(one mode per invocation, same workload)")
    parser.add_argument("--run-dir", type=Path, default=None)
    parser.add_argument("--render", action="store_true",
                        help="only rewrite the tables from the results JSON (printed unless "
                             "it is one of the files bench/README.md and "
                             "docs/benchmarks/e2e-results.md are generated from)")
    args = parser.parse_args(argv)
    if args.render:
        _write_tables(args.output or OUTPUT)
        return 0

    workload = load_workload(args.workload)
    nodes, gang_count = args.nodes, args.gangs
    if args.smoke:
        nodes = nodes or workload.smoke.get("nodes", 50)
        gang_count = gang_count or workload.smoke.get("gangs", 20)
    workload = dataclasses.replace(workload, gangs=gang_count or workload.gangs)
    description = load_description(ROOT / workload.cluster)
    if nodes is not None and nodes != len(description.hosts):
        description = layout_description(nodes, description)
    gangs = draw_gangs(workload, description.gpus)
    scratch = Path(tempfile.mkdtemp(prefix="bench-e2e-"))
    run_root = args.run_dir or scratch
    output = args.output or (scratch / "e2e.json" if args.smoke or args.only else OUTPUT)
    command = "python -m bench.e2e " + shlex.join(argv if argv is not None else sys.argv[1:])
    params = _parameters(workload, description, gangs)
    log(f"{params['nodes']} nodes x {params['gpus_per_node']} GPUs; {len(gangs)} gangs, "
        f"{params['pods']} pods, {params['gpus']} GPUs; seed {workload.seed}; runs in {run_root}")
    started_at, began, load_start = datetime.now(UTC), time.time(), load_average()
    rounds_count = args.rounds or (1 if args.smoke or args.only else ROUNDS)
    modes = args.modes or list(MODES)
    contenders = args.only or list(SCHEDULERS)
    by_mode: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    plan = {mode: [c for c in contenders if mode == "backlog" or c != CEILING]
            for mode in modes}
    if args.smoke and not args.only and not args.modes:
        plan = SMOKE_PLAN
    for number in range(1, rounds_count + 1):
        if rounds_count > 1:
            log(f"round {number} of {rounds_count}")
        for mode in modes:
            runs = {}
            for scheduler in plan[mode]:
                label = f"{mode}-{scheduler}" + (f"-{number}" if rounds_count > 1 else "")
                runs[scheduler] = run_one(scheduler, description, gangs, workload,
                                          run_root / label, args.profile, mode)
                _summary_line(runs[scheduler])
            by_mode[mode].append(runs)
    results: dict[str, Any] = {
        "format": 2,
        "command": command.strip(),
        "started_at": started_at.isoformat(timespec="seconds"),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.time() - began, 1),
        "machine": machine(load_start),
        "versions": _versions(),
        "parameters": params,
        "measurement": _measurement_note(),
        "modes": {mode: _mode_results(rounds) for mode, rounds in by_mode.items()},
    }
    if args.add and output.is_file():
        results = _merged(json.loads(output.read_text()), results)
    first = by_mode[modes[0]][0]
    if args.profile and "phalanx" in first and first["phalanx"].get("profile"):
        results["operator_profile"] = _profile_summary(Path(first["phalanx"]["profile"]))
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=1) + "\n")
    log(f"results in {output} ({results['duration_s'] / 60:.1f} min)")
    print(table.readme_section(results, table.section_name(output)))
    if table.renders(output) and not args.smoke:
        _write_tables(output)  # only files the tables are generated from
    # kube-scheduler leaving pods unbound (it fragments the cluster) is a result, reported
    # in the table; Phalanx or the ceiling leaving pods unbound is a failure of the run.
    failed = [name for rounds in by_mode.values() for r in rounds for name, run in r.items()
              if run["timed_out"] and name in ("phalanx", CEILING)]
    return 1 if failed else 0


def _merged(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """`new` with the modes of `old` it did not run (same parameters only)."""
    if old.get("format") != 2 or old.get("parameters") != new["parameters"]:
        raise SystemExit("--add: the results file holds another workload; use another --output")
    return {**new, "command": f"{old['command']} && {new['command']}",
            "started_at": old["started_at"], "duration_s": old["duration_s"] + new["duration_s"],
            "machine": {**new["machine"],
                        "load_average_start": old["machine"]["load_average_start"]},
            "modes": {**old["modes"], **new["modes"]}}


def _mode_results(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Round 1's runs in full, every round's headline figures, and Phalanx compared with
    each kube-scheduler that ran."""
    comparisons = {
        other: report.compare_rounds([r["phalanx"] for r in rounds], [r[other] for r in rounds],
                                     other)
        for other in SCHEDULERS[1:] if all("phalanx" in r and other in r for r in rounds)
    }
    return {"runs": rounds[0],
            "rounds": [{name: report.headline(run) for name, run in r.items()} for r in rounds],
            "comparisons": comparisons}


def _summary_line(run: dict[str, Any]) -> None:
    figures = report.headline(run)
    log(f"[{run['scheduler']}] " + ", ".join(f"{k} {v}" for k, v in figures.items()))


def _parameters(workload: Workload, description: ClusterDescription,
                gangs: list[Gang]) -> dict[str, Any]:
    return {
        **workload.to_json(),
        "nodes": len(description.hosts),
        "gpus_per_node": description.shape.gpus,
        "cluster_gpus": description.gpus,
        "pods": sum(g.pods for g in gangs),
        "gpus": sum(g.gpus for g in gangs),
        "gangs_by_pods": {str(k): v for k, v in sorted(Counter(g.pods for g in gangs).items())},
        "gangs_by_gpus_per_pod": {str(k): v for k, v in
                                  sorted(Counter(g.gpus_per_pod for g in gangs).items())},
        "kube_scheduler_qps": workload.scheduler_qps,
        "kube_scheduler_burst": workload.scheduler_burst,
        "topology_levels": [level.name for level in description.levels] + ["host"],
    }


def _measurement_note() -> dict[str, str]:
    doc = __doc__ or ""
    return {"how": doc.split("Measured per run:", 1)[-1].strip()}


def machine(load_start: Any) -> dict[str, Any]:
    """The machine a run was on, and its load at the start (given) and now (the end)."""
    return {"cpus": os.cpu_count(), "platform": platform.platform(),
            "python": f"CPython {platform.python_version()}",
            "load_average_start": load_start, "load_average_end": load_average()}


def _versions() -> dict[str, str]:
    def first_line(args: list[str]) -> str:
        try:
            out = subprocess.run(args, capture_output=True, text=True, timeout=30)
        except OSError as error:
            return f"unknown ({error})"
        return (out.stdout or out.stderr).strip().splitlines()[0]

    import aiohttp
    import kopf
    import kubernetes_asyncio

    commit = first_line(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    return {
        "kubernetes": first_line([str(binaries.binary("kube-apiserver")), "--version"]).split()[-1],
        "kube_scheduler": first_line([str(binaries.binary("kube-scheduler")), "--version"]),
        "kwok": first_line([str(binaries.binary("kwok")), "--version"]).split()[2],
        "etcd": first_line([str(binaries.binary("etcd")), "--version"]),
        "kopf": kopf.__version__ if hasattr(kopf, "__version__") else "unknown",
        "kubernetes_asyncio": kubernetes_asyncio.__version__,
        "aiohttp": aiohttp.__version__,
        "git_commit": commit,
    }


def _profile_summary(path: Path, top: int = 25) -> dict[str, Any]:
    """Functions of the operator by cumulative and by own time (cProfile)."""
    import pstats

    stats = pstats.Stats(str(path))
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = []
    for (file, line, name), (_, calls, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(file).name}:{line}({name})", "calls": calls,
                     "own_s": round(own, 3), "cumulative_s": round(cumulative, 3)})
    by_cumulative = sorted(rows, key=lambda r: -r["cumulative_s"])[:top]
    by_own = sorted(rows, key=lambda r: -r["own_s"])[:top]
    return {"file": str(path), "total_s": round(total, 2), "by_cumulative": by_cumulative,
            "by_own": by_own}


def _write_tables(output: Path) -> None:
    """bench/README.md's blocks and docs/benchmarks/e2e-results.md again, if `output` is one
    of their sources; another results file's table is printed."""
    if table.renders(output):
        for path in write([table.generated()]):
            log(f"tables written to {path}")
        return
    results = json.loads(output.read_text())
    if results.get("format") == 2:
        print(table.readme_section(results, table.section_name(output)))
    else:  # results of the two-contender benchmark, before backlog mode
        print(report.readme_section(results))


if __name__ == "__main__":
    raise SystemExit(main())
