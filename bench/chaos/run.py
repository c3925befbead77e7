"""Chaos: replay gangs on the local cluster while the operator is SIGKILLed at random moments.

    python -m bench.chaos [--seed N] [--output bench/results/chaos.json]   # `make chaos`
    python -m bench.chaos --render     # rewrite the tables from the JSON only

Two scenarios, each on the same real control plane (etcd + kube-apiserver + kwok):
- restart: one `phalanx operator` process (leader election on, a fixed identity, as a pod
  restarted in place); SIGKILLed, then started again at once;
- failover: two replicas; the leader (the Lease's holder) is SIGKILLed, the standby takes
  over, the killed one is started again as the new standby.
A kill comes after a seeded number of bindings since the operator was last ready (0 = at
once), so kills land in the middle of gangs being bound. After each kill a lone probe pod
without GPUs is created; kill -> probe bound is the recovery (restart) or failover time,
i.e. kill -> the new leader's first binding.

Checked all along, by a watch of every pod (`invariants.py`): no node's GPUs
overcommitted, no gang partly bound for longer than `partial_bound_seconds`; at the end:
every pod bound (nothing lost), every replica stopped by SIGTERM exits 0, no traceback in
any operator log. The operator runs with its shipped defaults except the loop timings of
the tests (debounce 0.1 s, periodic cycle 1 s).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import http.client
import json
import platform
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.deploy.operator_process import OperatorProcess

from bench import common
from bench.chaos.invariants import Invariants, Overcommit
from bench.chaos.report import LEASE_ATTEMPTS, generated, readme_section
from bench.chaos.workload import (
    GPU,
    GROUP_LABEL,
    ChaosGang,
    draw_gangs,
    gang_objects,
    probe_object,
)
from bench.common import ROOT
from bench.e2e.measure import Endpoint, watch_events
from phalanx.cluster import LocalCluster, load_description

RESULTS = common.RESULTS / "chaos.json"
PREEMPTION_RESULTS = common.RESULTS / "chaos-preemption.json"
LEASE_NAMESPACE = "phalanx-system"
PATIENCE = 120.0  # upper bound of any single wait; outcomes are asserted, not speed
TRACEBACK = "Traceback (most recent call last)"
ELECTION_FIELDS = ("LEASE_DURATION_SECONDS", "RENEW_DEADLINE_SECONDS", "RETRY_PERIOD_SECONDS")


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    replicas: int  # 1: restarted in place after a kill; 2: the standby takes over
    seed: int
    gangs: int
    submit_seconds: float
    runtimes: tuple[int, int]  # seconds a gang runs, drawn in this range
    kills: int
    bindings_before_kill: tuple[int, int]  # a kill after this many bindings (seeded)
    partial_bound_seconds: float
    settle_seconds: float = PATIENCE  # after the last kill, for every pod to be bound
    election: tuple[float, float, float] | None = None  # lease, renew, retry; None: defaults


@dataclasses.dataclass
class Outcome:
    """What one scenario showed; `violations()` is empty when every invariant held."""

    scenario: Scenario
    pods: int
    kills: int = 0
    recoveries: list[float] = dataclasses.field(default_factory=list)  # kill -> first binding
    handover: float | None = None  # SIGTERM to the leader -> the standby's first binding
    longest_partial: float = 0.0
    overcommits: list[Overcommit] = dataclasses.field(default_factory=list)
    unbound: list[str] = dataclasses.field(default_factory=list)
    tracebacks: list[str] = dataclasses.field(default_factory=list)
    exit_codes: list[int] = dataclasses.field(default_factory=list)
    lease_buckets: dict[float, int] = dataclasses.field(default_factory=dict)  # cumulative
    unplanned_exits: list[int] = dataclasses.field(default_factory=list)  # 1: deposed

    @property
    def lease_attempts(self) -> int:
        return self.lease_buckets.get(float("inf"), 0)

    def lease_attempts_over(self, seconds: float) -> int:
        return self.lease_attempts - self.lease_buckets.get(seconds, 0)

    @property
    def slowest_lease_attempt(self) -> float:
        """Upper bound of the slowest attempt (the first bucket holding them all)."""
        total = self.lease_attempts
        return min((le for le, n in self.lease_buckets.items() if n >= total), default=0.0)

    def violations(self) -> list[str]:
        found = [f"overcommit: {o}" for o in self.overcommits[:5]]
        if self.longest_partial > self.scenario.partial_bound_seconds:
            found.append(f"a gang stayed partly bound {self.longest_partial:.1f}s "
                         f"(bound {self.scenario.partial_bound_seconds:g}s)")
        if self.unbound:
            found.append(f"{len(self.unbound)} pods never bound: {self.unbound[:5]}")
        found += [f"traceback in {where}" for where in self.tracebacks]
        if self.unplanned_exits:
            found.append(f"replicas exited unasked (1: deposed): {self.unplanned_exits}")
        if any(code != 0 for code in self.exit_codes):
            found.append(f"a replica stopped by SIGTERM exited {self.exit_codes}")
        if self.kills != self.scenario.kills or len(self.recoveries) != self.kills:
            found.append(f"{self.kills} of {self.scenario.kills} kills done, "
                         f"{len(self.recoveries)} recovered")
        return found

    def to_json(self) -> dict[str, Any]:
        s = self.scenario
        return {
            "scenario": s.name, "replicas": s.replicas, "seed": s.seed, "gangs": s.gangs,
            "pods": self.pods, "kills": self.kills, "killsSurvived": len(self.recoveries),
            "recoverySeconds": [round(r, 2) for r in self.recoveries],
            "recoveryMaxSeconds": round(max(self.recoveries, default=0.0), 2),
            "handoverSeconds": None if self.handover is None else round(self.handover, 2),
            "longestPartialSeconds": round(self.longest_partial, 2),
            "partialBoundSeconds": s.partial_bound_seconds,
            "overcommits": len(self.overcommits), "unbound": len(self.unbound),
            "tracebacks": len(self.tracebacks), "violations": self.violations(),
            "unplannedExits": self.unplanned_exits,
            "leaseAttempts": self.lease_attempts,
            "leaseAttemptsOver1s": self.lease_attempts_over(1.0),
            "slowestLeaseAttemptSecondsAtMost": self.slowest_lease_attempt,
        }


class PodFeed:
    """A thread feeding every pod change of the cluster into `Invariants` (list, then watch;
    listed again whenever the watch ends)."""

    def __init__(self, endpoint: Endpoint, invariants: Invariants, lock: threading.Lock):
        self._endpoint = endpoint
        self._invariants = invariants
        self._lock = lock
        self._stop = threading.Event()
        self.synced = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"chaos feed {self.path}",
                                        daemon=True)

    def start(self) -> PodFeed:
        self._thread.start()
        if not self.synced.wait(PATIENCE):
            raise RuntimeError("the pod watch did not start")
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError, http.client.HTTPException, ValueError):
                self._watch(self._list())

    path = "/api/v1/pods"

    def _list(self) -> str:
        listing = json.loads(self._endpoint.get_text(self.path))
        now, wall = time.monotonic(), time.time()
        with self._lock:
            known = {key for key in self._invariants.pods}
            listed = set()
            for pod in listing.get("items") or []:
                meta = pod["metadata"]
                listed.add(f"{meta['namespace']}/{meta['name']}")
                self._invariants.observe(pod, False, now, wall)
            for key in known - listed:
                namespace, name = key.split("/", 1)
                gone = {"metadata": {"namespace": namespace, "name": name}}
                self._invariants.observe(gone, True, now, wall)
        return str(listing["metadata"]["resourceVersion"])

    def _observe(self, body: dict[str, Any], deleted: bool) -> None:
        self._invariants.observe(body, deleted, time.monotonic(), time.time())

    def _watch(self, version: str) -> None:
        connection = self._endpoint.connection(timeout=None)
        try:
            connection.request("GET", f"{self.path}?watch=1&resourceVersion={version}"
                               "&timeoutSeconds=600", headers=self._endpoint.headers())
            response = connection.getresponse()
            if response.status != 200:
                return
            self.synced.set()
            for event in watch_events(response):
                if self._stop.is_set() or event.get("type") == "ERROR":
                    return
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    with self._lock:
                        self._observe(event["object"], event["type"] == "DELETED")
        finally:
            connection.close()


class Replicas:
    """The operator processes of a scenario: one per identity, each start a new log."""

    def __init__(self, cluster: LocalCluster, workdir: Path, lease: str, count: int,
                 election: tuple[float, float, float] | None = None) -> None:
        self._cluster = cluster
        self._election = election
        self._workdir = workdir
        self._lease = lease
        self.identities = [f"replica-{chr(ord('a') + i)}" for i in range(count)]
        self.running: dict[str, OperatorProcess] = {}
        self.logs: list[Path] = []
        self.exit_codes: list[int] = []
        self.lease_attempts: dict[str, dict[float, float]] = {}  # process -> le -> count
        self.unplanned_exits: list[int] = []  # exit codes of replicas that stopped by themselves

    def start(self, identity: str) -> OperatorProcess:
        env = {
            "PHALANX_LEADER_ELECTION__ENABLED": "true",
            "PHALANX_LEADER_ELECTION__LEASE_NAME": self._lease,
            "PHALANX_LEADER_ELECTION__LEASE_NAMESPACE": LEASE_NAMESPACE,
            "PHALANX_LEADER_ELECTION__IDENTITY": identity,
        }
        if self._election is not None:
            for field, value in zip(ELECTION_FIELDS, self._election, strict=True):
                env[f"PHALANX_LEADER_ELECTION__{field}"] = f"{value:g}"
        name = f"{identity}-{len(self.logs)}"
        process = OperatorProcess(name, self._cluster.kubeconfig, self._workdir, env).start()
        self.logs.append(process.log)
        self.running[identity] = process
        return process

    def holder(self) -> str:
        reply = self._cluster.rest().get(
            f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{self._lease}")
        if reply.status != 200:
            return ""
        return str((reply.body.get("spec") or {}).get("holderIdentity") or "")

    def wait_settled(self) -> str:
        """Wait until a leader has synced and every other replica stands by; the leader."""
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            self.restart_exited()
            leader = self.holder()
            states = {i: _ready(p) for i, p in self.running.items()}
            if leader in states and states[leader] == "caches synced" and all(
                    state in ("standing by", "caches synced") for state in states.values()):
                return leader
            time.sleep(0.1)
        raise RuntimeError(f"replicas never settled: leader {self.holder()!r}")

    def restart_exited(self) -> None:
        """A replica that exited on its own (1: deposed) is started again, as the kubelet
        would; the exit is counted."""
        for identity, process in list(self.running.items()):
            assert process.process is not None
            code = process.process.poll()
            if code is not None:
                self.unplanned_exits.append(code)
                self.start(identity)

    def kill(self, identity: str) -> None:
        self.read_lease_attempts()
        self.running.pop(identity).kill()

    def terminate(self, identity: str) -> OperatorProcess:
        """SIGTERM, as a rolling update stops a pod; the process, still exiting."""
        self.read_lease_attempts()
        process = self.running.pop(identity)
        assert process.process is not None
        process.process.send_signal(signal.SIGTERM)
        return process

    def read_lease_attempts(self) -> None:
        """Fold every running replica's lease-attempt histogram into `lease_attempts`."""
        for process in self.running.values():
            with contextlib.suppress(OSError, AssertionError):
                buckets = {float(dict(labels)["le"]): value
                           for (name, labels), value in process.metrics().items()
                           if name == LEASE_ATTEMPTS + "_bucket"}
                self.lease_attempts[process.log.stem] = buckets

    def lease_attempt_buckets(self) -> dict[float, int]:
        """Every replica's lease-attempt histogram summed (cumulative count per bound)."""
        merged: dict[float, int] = {}
        for buckets in self.lease_attempts.values():
            for le, count in buckets.items():
                merged[le] = merged.get(le, 0) + int(count)
        return dict(sorted(merged.items()))

    def stop_all(self) -> None:
        self.read_lease_attempts()
        for process in self.running.values():
            self.exit_codes.append(process.stop())
        self.running.clear()

    def ensure_dead(self) -> None:
        for process in self.running.values():
            process.ensure_dead()

    def tracebacks(self) -> list[str]:
        return [f"{log.name}" for log in self.logs
                if log.exists() and TRACEBACK in log.read_text(errors="replace")]


def _ready(process: OperatorProcess) -> str:
    """The replica's readiness text ("" while it is not ready or not serving yet)."""
    if process.process is None or process.process.poll() is not None:
        return ""
    if not any(r.get("event") == "serving metrics, health and readiness"
               for r in process.records()):
        return ""
    with contextlib.suppress(OSError):
        status, text = process.get("/readyz")
        return text.strip() if status == 200 else ""
    return ""


def run_scenario(cluster: LocalCluster, scenario: Scenario, workdir: Path,
                 progress: Callable[[str], None] = lambda _: None) -> Outcome:
    """Run one scenario on a started, prepared cluster; the namespace is cleaned up after."""
    namespace = f"chaos-{scenario.name}-{secrets.token_hex(3)}"
    lease = f"chaos-{namespace}"
    cluster.kubectl("create", "namespace", namespace)
    cluster.kubectl("create", "namespace", LEASE_NAMESPACE, check=False)
    nodes = cluster.rest().get("/api/v1/nodes").body["items"]
    allocatable = {n["metadata"]["name"]: int(n["status"]["allocatable"].get(GPU, 0))
                   for n in nodes}
    gangs = draw_gangs(scenario.seed, scenario.gangs, scenario.submit_seconds, scenario.runtimes)
    invariants = Invariants(allocatable, namespace, GROUP_LABEL)
    lock = threading.Lock()
    endpoint = Endpoint(cluster.server, cluster.token, str(cluster.ca_cert))
    feed = PodFeed(endpoint, invariants, lock).start()
    replicas = Replicas(cluster, workdir, lease, scenario.replicas, scenario.election)
    outcome = Outcome(scenario, pods=sum(g.pods for g in gangs))
    try:
        for identity in replicas.identities:
            replicas.start(identity)
        replicas.wait_settled()
        submitter = Submitter(cluster, namespace, gangs, invariants, lock).start()
        rng = random.Random(scenario.seed)
        for number in range(scenario.kills):
            leader = replicas.wait_settled()
            wanted = rng.randint(*scenario.bindings_before_kill)
            with lock:
                start = _bound_count(invariants)
            _wait(lambda s=start, w=wanted: _bound_count_locked(invariants, lock) - s >= w
                  or submitter.done_and_idle(), f"{wanted} bindings before kill {number + 1}")
            replicas.kill(leader)
            killed = time.monotonic()
            outcome.kills += 1
            if scenario.replicas == 1:
                replicas.start(leader)  # the pod's container restarts in place
            probe = f"probe-{number}"
            cluster.rest().post(f"/api/v1/namespaces/{namespace}/pods",
                                probe_object(probe, namespace))
            bound_at = _wait(lambda p=probe: (replicas.restart_exited(),
                                              _probe_bound(invariants, lock, namespace, p))[1],
                             f"probe {probe} bound after kill {number + 1}")
            outcome.recoveries.append(bound_at - killed)
            progress(f"{scenario.name}: kill {number + 1}/{scenario.kills} of {leader} "
                     f"after {wanted} bindings; first binding {bound_at - killed:.2f}s later")
            if scenario.replicas > 1:
                replicas.start(leader)  # back as the standby
        if scenario.replicas > 1:
            outcome.handover = _handover(cluster, replicas, namespace, invariants, lock)
            progress(f"{scenario.name}: SIGTERM to the leader; first binding "
                     f"{outcome.handover:.2f}s later")
        submitter.join()
        with contextlib.suppress(TimeoutError):
            _wait(lambda: not _unbound_locked(invariants, lock), "every pod bound",
                  scenario.settle_seconds)
        with lock:
            invariants.finish(time.monotonic())
            outcome.unbound = invariants.unbound()
            outcome.longest_partial = invariants.longest_partial(time.monotonic())
            outcome.overcommits = list(invariants.overcommits)
        replicas.stop_all()
        outcome.exit_codes = replicas.exit_codes
        outcome.lease_buckets = replicas.lease_attempt_buckets()
        outcome.unplanned_exits = list(replicas.unplanned_exits)
        outcome.tracebacks = replicas.tracebacks()
        if submitter.failures:
            raise RuntimeError(f"submission failed: {submitter.failures[:3]}")
        return outcome
    finally:
        feed.stop()
        replicas.ensure_dead()
        cluster.kubectl("delete", "pods,podgroups.scheduling.phalanx.io", "--all", "-n",
                        namespace, "--grace-period=0", "--force", "--wait=false", check=False)
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        cluster.kubectl("delete", "lease", lease, "-n", LEASE_NAMESPACE, "--ignore-not-found",
                        check=False)


class Submitter:
    """Creates the gangs at their arrival times (a replay), in a thread."""

    def __init__(self, cluster: LocalCluster, namespace: str, gangs: list[ChaosGang],
                 invariants: Invariants, lock: threading.Lock) -> None:
        self._cluster = cluster
        self._namespace = namespace
        self._gangs = gangs
        self._invariants = invariants
        self._lock = lock
        self.failures: list[str] = []
        self._done = threading.Event()
        self._stop = threading.Event()
        self._started = 0.0  # set by start(): the replay's arrivals count from there
        self._thread = threading.Thread(target=self._run, name="chaos submitter", daemon=True)

    def start(self) -> Submitter:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def join(self) -> None:
        """Wait for the whole replay (its last arrival, then PATIENCE); one still running
        then is stopped and counted as a failure. Waiting PATIENCE alone returned while
        gangs were still to arrive when the kills ended early: the preemption mix of seed
        20261203 was checked without its last arrivals, and the thread then posted into
        the stopped cluster."""
        last = max((g.arrival for g in self._gangs), default=0.0)
        self._thread.join(max(self._started + last - time.monotonic(), 0.0) + PATIENCE)
        if self._thread.is_alive():
            self._stop.set()
            self.failures.append("the replay did not finish within its patience")

    def done_and_idle(self) -> bool:
        """Everything submitted and nothing waiting: no binding will come any more."""
        return self._done.is_set() and not _unbound_locked(self._invariants, self._lock)

    def _run(self) -> None:
        rest = self._cluster.rest()
        try:
            for gang in self._gangs:
                delay = self._started + gang.arrival - time.monotonic()
                if delay > 0 and self._stop.wait(delay):  # the replay's arrival times
                    return
                with self._lock:
                    self._invariants.expect(gang.name, gang.pod_names())
                for body in gang_objects(gang, self._namespace):
                    kind = "podgroups" if body["kind"] == "PodGroup" else "pods"
                    prefix = "/apis/scheduling.phalanx.io/v1alpha1" if kind == "podgroups" \
                        else "/api/v1"
                    reply = rest.post(f"{prefix}/namespaces/{self._namespace}/{kind}", body)
                    if reply.status not in (201, 409):
                        self.failures.append(f"{body['metadata']['name']}: {reply.status}")
        finally:
            self._done.set()


def _handover(cluster: LocalCluster, replicas: Replicas, namespace: str,
              invariants: Invariants, lock: threading.Lock) -> float:
    """SIGTERM to the leader (its lease released on the way out) -> the standby's first
    binding; the stopped replica comes back as the standby."""
    leader = replicas.wait_settled()
    process = replicas.terminate(leader)
    began = time.monotonic()
    probe = "probe-handover"
    cluster.rest().post(f"/api/v1/namespaces/{namespace}/pods", probe_object(probe, namespace))
    bound_at = _wait(lambda: _probe_bound(invariants, lock, namespace, probe), "handover probe")
    assert process.process is not None
    replicas.exit_codes.append(process.process.wait(PATIENCE))
    replicas.start(leader)
    return bound_at - began


def _bound_count(invariants: Invariants) -> int:
    return sum(invariants.bound(gang) for gang in invariants.gangs)


def _bound_count_locked(invariants: Invariants, lock: threading.Lock) -> int:
    with lock:
        return _bound_count(invariants)


def _unbound_locked(invariants: Invariants, lock: threading.Lock) -> list[str]:
    with lock:
        return invariants.unbound()


def _probe_bound(invariants: Invariants, lock: threading.Lock, namespace: str,
                 name: str) -> bool:
    with lock:
        state = invariants.pods.get(f"{namespace}/{name}")
        return state is not None and bool(state.node)


def _wait(check: Callable[[], bool], what: str, patience: float = PATIENCE) -> float:
    """Poll `check` until true; the monotonic time it was first seen true."""
    deadline = time.monotonic() + patience
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what}")
        time.sleep(0.02)
    return time.monotonic()


# -- the full run (`make chaos`) ---------------------------------------------------------------

def full_scenarios(seed: int, election: tuple[float, float, float] | None = None,
                   only: str | None = None) -> list[Scenario]:
    scenarios = [
        Scenario("restart", 1, seed, gangs=200, submit_seconds=90, runtimes=(3, 12), kills=20,
                 bindings_before_kill=(0, 40), partial_bound_seconds=30, election=election),
        Scenario("failover", 2, seed + 1, gangs=200, submit_seconds=90, runtimes=(3, 12),
                 kills=10, bindings_before_kill=(0, 40), partial_bound_seconds=30,
                 election=election),
    ]
    return [s for s in scenarios if only in (None, s.name)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--cluster", default="examples/clusters/medium.yaml")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--render", action="store_true",
                        help="only rewrite the tables from --output (printed unless it is "
                             "bench/results/chaos.json, the tables' source)")
    parser.add_argument("--only", choices=["restart", "failover"], default=None)
    parser.add_argument("--election", default=None, metavar="LEASE,RENEW,RETRY",
                        help="leader election seconds instead of the defaults, e.g. 15,10,2")
    parser.add_argument("--preemption", action="store_true",
                        help="the preemption-and-reclaim mix instead (bench.chaos.preemption): "
                             f"--seeds runs from --seed on, into {PREEMPTION_RESULTS.name}")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.preemption:
        return _preemption(args, argv)
    if not args.render:
        election = None
        if args.election:
            values = [float(v) for v in args.election.split(",")]
            if len(values) != 3:
                parser.error("--election takes three numbers: LEASE,RENEW,RETRY")
            election = (values[0], values[1], values[2])
        scenarios = full_scenarios(args.seed, election, args.only)
        results = run_all(scenarios, ROOT / args.cluster, argv)
        args.output.write_text(json.dumps(results, indent=2) + "\n")
    results = json.loads(args.output.read_text())
    if args.output.resolve() == RESULTS:
        common.write([generated()])
    else:
        print(readme_section(results))
    failed = [v for s in results["scenarios"] for v in s["violations"]]
    for violation in failed:
        print(f"VIOLATION: {violation}", file=sys.stderr)
    return 1 if failed else 0


def _preemption(args: argparse.Namespace, argv: list[str] | None) -> int:
    """`--preemption`: the mix's seeds on one cluster, one after the other."""
    from bench.chaos.preemption import full_mix, run_mix  # it builds on this module

    output = args.output if args.output != RESULTS else PREEMPTION_RESULTS
    if not args.render:
        began = time.monotonic()
        description = load_description(ROOT / args.cluster)
        tmp = tempfile.mkdtemp(prefix="phalanx-chaos-preemption-")
        print(f"operator logs and the cluster in {tmp}", flush=True)
        outcomes = []
        with LocalCluster(Path(tmp) / "cluster", die_with_parent=True) as cluster:
            cluster.prepare(description)
            for scenario in full_mix(args.seed, args.seeds):
                outcome = run_mix(cluster, scenario, Path(tmp),
                                  lambda line: print(line, flush=True))
                print(json.dumps(outcome.to_json()), flush=True)
                outcomes.append(outcome)
        results = {
            "command": "python -m bench.chaos" + "".join(
                f" {a}" for a in (sys.argv[1:] if argv is None else argv)),
            "finished_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "duration_s": round(time.monotonic() - began, 1),
            "cluster": {"file": args.cluster, "nodes": len(description.hosts),
                        "gpus": description.gpus},
            "machine": {"cpus": _cpus(), "python": platform.python_version()},
            "operator": _operator_source(),
            "scenarios": [o.to_json() for o in outcomes],
        }
        output.write_text(json.dumps(results, indent=2) + "\n")
    results = json.loads(output.read_text())
    if output.resolve() == PREEMPTION_RESULTS:
        common.write([generated()])
    failed = [v for s in results["scenarios"] for v in s["violations"]]
    for violation in failed:
        print(f"VIOLATION: {violation}", file=sys.stderr)
    return 1 if failed else 0


def _operator_source() -> str:
    """Where the operator's code came from: the working tree's commit (and whether the
    tree differed from it), or a snapshot put first on PYTHONPATH (e.g. `git archive HEAD
    operator` into /tmp/phalanx-snap-<commit>, so that others' edits in progress in a
    shared tree do not run)."""
    import phalanx

    package = Path(phalanx.__file__).resolve().parent
    if not package.is_relative_to(ROOT):
        return f"snapshot {package.parent.parent.name}"
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "operator"],
                           capture_output=True, text=True).stdout.strip()
    return f"working tree at {head}" + (" with local changes" if dirty else "")


def run_all(scenarios: list[Scenario], cluster_file: Path,
            argv: list[str] | None) -> dict[str, Any]:
    began = time.monotonic()
    description = load_description(cluster_file)
    outcomes = []
    tmp = tempfile.mkdtemp(prefix="phalanx-chaos-")  # kept: the operators' logs are there
    print(f"operator logs and the cluster in {tmp}", flush=True)
    with LocalCluster(Path(tmp) / "cluster", die_with_parent=True) as cluster:
        cluster.prepare(description)
        for scenario in scenarios:
            outcomes.append(run_scenario(cluster, scenario, Path(tmp),
                                         lambda line: print(line, flush=True)))
    return {
        "command": "python -m bench.chaos" + "".join(f" {a}" for a in (argv or [])),
        "finished_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "duration_s": round(time.monotonic() - began, 1),
        "cluster": {"file": str(cluster_file.relative_to(ROOT)), "nodes": len(description.hosts),
                    "gpus": description.gpus},
        "machine": {"cpus": _cpus(), "python": platform.python_version()},
        "scenarios": [o.to_json() for o in outcomes],
    }


def _cpus() -> int:
    with contextlib.suppress(OSError, ValueError):
        return int(subprocess.run(["nproc"], capture_output=True, text=True).stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
