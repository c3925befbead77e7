"""Chaos under preemption: a full cluster, gangs of three priorities in two Queues with
guarantees, every gang required inside one rack, while the operator is SIGKILLed.

    python -m bench.chaos --preemption [--seeds 3]   # writes bench/results/chaos-preemption.json

The cluster is first filled (about 1.15 times its GPUs asked) by low-priority gangs that
run longer than the scenario, most of them in queue chaos-b (guarantee a quarter of the
GPUs), the rest in chaos-a (guarantee half); then gangs of priority 0, 100 and 1000 arrive
in both queues, more than the cluster holds. chaos-a, below its guarantee, reclaims from
chaos-b; a gang of higher priority preempts lower ones of its own queue. One replica
(binder mode, leader election on, a fixed identity) is SIGKILLed `kills` times and started
again at once; a kill comes either right after the next eviction is seen by the pod watch
(a `DisruptionTarget` condition or a deletion: between the evictions and the binding of
the preemptor) or after a seeded number of bindings, each drawn from the seed.

Checked (`invariants.py`, fed by watches of every pod and of the namespace's PodGroups):
no GPU overcommitted; no gang partly bound longer than `partial_bound_seconds`; no pod
asked to be evicted again once being deleted, and no victim group evicted of more pods
than it has (its Events); no pod of a gang of lower or equal priority bound onto a node
while it is held for another gang (`status.nominated`, compared by resource version); at
the end every gang bound, whole waiting or evicted whole (none lost half way), and no
traceback in any operator log.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import random
import re
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.chaos.invariants import GangInfo, Invariants
from bench.chaos.run import (
    LEASE_NAMESPACE,
    PATIENCE,
    PodFeed,
    Replicas,
    Submitter,
    _bound_count,
    _probe_bound,
    _wait,
)
from bench.chaos.workload import GPU, GROUP_LABEL, PODGROUP_API, ChaosGang, probe_object
from bench.e2e.measure import Endpoint
from phalanx.cluster import LocalCluster
from phalanx.cluster.labels import TOPOLOGY_LEAF

PRIORITY_CLASSES = {"chaos-low": 0, "chaos-mid": 100, "chaos-high": 1000}
QUEUE_A, QUEUE_B = "chaos-a", "chaos-b"
EVICTION_REASONS = ("Preempted", "Reclaimed")
EVENT_COUNT = re.compile(r"^(\d+) pods? evicted")


@dataclasses.dataclass(frozen=True)
class MixScenario:
    name: str
    seed: int
    arrivals: int  # gangs arriving after the fill
    submit_seconds: float  # the arrivals spread over this long, from `fill_seconds` on
    kills: int
    partial_bound_seconds: float
    fill_share: float = 1.15  # GPUs the fill asks, per GPU of the cluster
    fill_seconds: float = 8.0
    fill_runtime: int = 3600  # the fill outlives the scenario: victims still running
    guarantees: tuple[float, float] = (0.5, 0.25)  # chaos-a, chaos-b: share of the GPUs
    eviction_kills: float = 0.65  # share of kills right after an eviction is seen
    bindings_before_kill: tuple[int, int] = (0, 20)
    trigger_patience: float = 20.0  # a kill waiting for its trigger longer comes anyway
    settle_seconds: float = 60.0  # after the last kill, for partial gangs to settle


@dataclasses.dataclass
class MixOutcome:
    scenario: MixScenario
    gangs: int
    pods: int
    duration: float = 0.0
    kills: int = 0
    kills_after_eviction: int = 0
    recoveries: list[float] = dataclasses.field(default_factory=list)
    evictions: dict[str, int] = dataclasses.field(default_factory=dict)  # watch: why -> pods
    evicted_done: int = 0  # of them, pods that had ended already
    evictions_logged: dict[str, int] = dataclasses.field(default_factory=dict)  # operator log
    eviction_events: dict[str, int] = dataclasses.field(default_factory=dict)  # reason -> pods
    over_evicted_groups: list[str] = dataclasses.field(default_factory=list)  # by Events
    evicted_twice: list[str] = dataclasses.field(default_factory=list)
    holds: int = 0
    nomination_violations: list[str] = dataclasses.field(default_factory=list)
    longest_partial: float = 0.0
    overcommits: int = 0
    states: dict[str, int] = dataclasses.field(default_factory=dict)  # state -> gangs
    lost: list[str] = dataclasses.field(default_factory=list)
    tracebacks: list[str] = dataclasses.field(default_factory=list)
    exit_codes: list[int] = dataclasses.field(default_factory=list)
    unplanned_exits: list[int] = dataclasses.field(default_factory=list)

    def violations(self) -> list[str]:
        found = []
        if self.overcommits:
            found.append(f"{self.overcommits} overcommits")
        if self.longest_partial > self.scenario.partial_bound_seconds:
            found.append(f"a gang stayed partly bound {self.longest_partial:.1f}s "
                         f"(bound {self.scenario.partial_bound_seconds:g}s)")
        if self.lost:
            found.append(f"{len(self.lost)} gangs lost half way: {self.lost[:5]}")
        if self.evicted_twice:
            found.append(f"pods asked to be evicted again: {self.evicted_twice[:5]}")
        if self.over_evicted_groups:
            found.append(f"groups evicted of more pods than they have: "
                         f"{self.over_evicted_groups[:5]}")
        found += [f"nomination taken: {v}" for v in self.nomination_violations[:5]]
        found += [f"traceback in {where}" for where in self.tracebacks]
        if self.unplanned_exits:
            found.append(f"replicas exited unasked: {self.unplanned_exits}")
        if any(code != 0 for code in self.exit_codes):
            found.append(f"a replica stopped by SIGTERM exited {self.exit_codes}")
        if self.kills != self.scenario.kills or len(self.recoveries) != self.kills:
            found.append(f"{self.kills} of {self.scenario.kills} kills done, "
                         f"{len(self.recoveries)} recovered")
        if not sum(self.evictions.values()):
            found.append("no eviction happened: the scenario did not exercise preemption")
        return found

    def to_json(self) -> dict[str, Any]:
        s = self.scenario
        return {
            "scenario": s.name, "seed": s.seed, "gangs": self.gangs, "pods": self.pods,
            "durationSeconds": round(self.duration, 1),
            "kills": self.kills, "killsAfterEviction": self.kills_after_eviction,
            "killsSurvived": len(self.recoveries),
            "recoverySeconds": [round(r, 2) for r in self.recoveries],
            "recoveryMaxSeconds": round(max(self.recoveries, default=0.0), 2),
            "evictedPods": sum(self.evictions.values()), "evictedPodsBy": self.evictions,
            "evictedPodsEnded": self.evicted_done,
            "evictedPodsLogged": self.evictions_logged,
            "evictedPodsInEvents": self.eviction_events,
            "overEvictedGroups": self.over_evicted_groups,
            "evictedTwice": len(self.evicted_twice), "holdsSeen": self.holds,
            "nominationViolations": len(self.nomination_violations),
            "nominationViolationDetails": self.nomination_violations[:20],
            "longestPartialSeconds": round(self.longest_partial, 2),
            "partialBoundSeconds": s.partial_bound_seconds,
            "overcommits": self.overcommits, "gangStates": self.states,
            "lostGangs": len(self.lost), "tracebacks": len(self.tracebacks),
            "unplannedExits": self.unplanned_exits, "violations": self.violations(),
        }


def draw_mix(scenario: MixScenario, cluster_gpus: int, rack_gpus: int) -> list[ChaosGang]:
    """The fill, then the arrivals, by arrival time: every gang required inside one rack."""
    rng = random.Random(scenario.seed)

    def shape() -> tuple[int, int]:
        while True:
            pods, gpus = rng.choice((1, 2, 2, 4, 4, 8)), rng.choice((4, 8, 8))
            if pods * gpus <= rack_gpus:
                return pods, gpus

    gangs: list[ChaosGang] = []
    target = scenario.fill_share * cluster_gpus
    for queue, share in ((QUEUE_B, 0.7), (QUEUE_A, 0.3)):
        asked = 0
        while asked < share * target:
            pods, gpus = shape()
            gangs.append(ChaosGang(f"f{len(gangs):03d}", pods, gpus,
                                   round(rng.uniform(0, 2), 3), scenario.fill_runtime,
                                   "chaos-low", queue, "rack"))
            asked += pods * gpus
    runtimes = {"chaos-low": (60, 120), "chaos-mid": (40, 120), "chaos-high": (20, 50)}
    for i in range(scenario.arrivals):
        pods, gpus = shape()
        priority = rng.choice(("chaos-low", "chaos-mid", "chaos-mid", "chaos-high",
                               "chaos-high"))
        arrival = scenario.fill_seconds + rng.uniform(0, scenario.submit_seconds)
        gangs.append(ChaosGang(f"a{i:03d}", pods, gpus, round(arrival, 3),
                               rng.randint(*runtimes[priority]), priority,
                               rng.choice((QUEUE_A, QUEUE_B)), "rack"))
    return sorted(gangs, key=lambda g: (g.arrival, g.name))


def setup_objects(cluster_gpus: int, guarantees: tuple[float, float]) -> list[dict[str, Any]]:
    """The three PriorityClasses and the two Queues (reclaimable, no capability)."""
    classes: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": name}, "value": value}
        for name, value in PRIORITY_CLASSES.items()]
    queues = [
        {"apiVersion": PODGROUP_API, "kind": "Queue", "metadata": {"name": name},
         "spec": {"weight": 1, "guarantee": {GPU: str(int(share * cluster_gpus))},
                  "reclaimable": True}}
        for name, share in zip((QUEUE_A, QUEUE_B), guarantees, strict=True)]
    return [*classes, *queues]


class GroupFeed(PodFeed):
    """The namespace's PodGroups into `Invariants.observe_group` (their holds)."""

    def __init__(self, endpoint: Endpoint, invariants: Invariants, lock: threading.Lock,
                 namespace: str) -> None:
        self.path = f"/apis/{PODGROUP_API}/namespaces/{namespace}/podgroups"
        super().__init__(endpoint, invariants, lock)

    def _list(self) -> str:
        listing = json.loads(self._endpoint.get_text(self.path))
        with self._lock:
            for group in listing.get("items") or []:
                self._invariants.observe_group(group, False)
        return str(listing["metadata"]["resourceVersion"])

    def _observe(self, body: dict[str, Any], deleted: bool) -> None:
        self._invariants.observe_group(body, deleted)


def run_mix(cluster: LocalCluster, scenario: MixScenario, workdir: Path,
            progress: Callable[[str], None] = lambda _: None) -> MixOutcome:
    """Run the mix on a started, prepared cluster; its namespace is removed after."""
    began = time.monotonic()
    namespace = f"chaos-{scenario.name}-{secrets.token_hex(3)}"
    lease = f"chaos-{namespace}"
    cluster.kubectl("create", "namespace", namespace)
    cluster.kubectl("create", "namespace", LEASE_NAMESPACE, check=False)
    nodes = cluster.rest().get("/api/v1/nodes").body["items"]
    allocatable = {n["metadata"]["name"]: int(n["status"]["allocatable"].get(GPU, 0))
                   for n in nodes}
    racks: Counter[str] = Counter()
    for n in nodes:
        racks[n["metadata"]["labels"].get(TOPOLOGY_LEAF, "")] += allocatable[n["metadata"]["name"]]
    cluster_gpus = sum(allocatable.values())
    cluster.apply(setup_objects(cluster_gpus, scenario.guarantees))
    gangs = draw_mix(scenario, cluster_gpus, max(racks.values()))
    invariants = Invariants(allocatable, namespace, GROUP_LABEL)
    for g in gangs:
        invariants.info[g.name] = GangInfo(PRIORITY_CLASSES[g.priority_class], g.queue)
    lock = threading.Lock()
    endpoint = Endpoint(cluster.server, cluster.token, str(cluster.ca_cert))
    feed = PodFeed(endpoint, invariants, lock).start()
    groups = GroupFeed(endpoint, invariants, lock, namespace).start()
    logs = workdir / f"{scenario.name}-{scenario.seed}"  # each seed's operator logs kept
    logs.mkdir(parents=True, exist_ok=True)
    replicas = Replicas(cluster, logs, lease, 1)
    outcome = MixOutcome(scenario, gangs=len(gangs), pods=sum(g.pods for g in gangs))
    try:
        identity = replicas.identities[0]
        replicas.start(identity)
        replicas.wait_settled()
        submitter = Submitter(cluster, namespace, gangs, invariants, lock).start()
        rng = random.Random(scenario.seed)
        for number in range(scenario.kills):
            replicas.wait_settled()
            after_eviction = rng.random() < scenario.eviction_kills
            wanted = rng.randint(*scenario.bindings_before_kill)
            with lock:
                bound, signals = _bound_count(invariants), invariants.eviction_signals

            def trigger(b: int = bound, s: int = signals, w: int = wanted,
                        e: bool = after_eviction) -> bool:
                with lock:
                    if e:
                        return invariants.eviction_signals > s
                    return _bound_count(invariants) - b >= w

            fired = _poll(trigger, scenario.trigger_patience)
            replicas.kill(identity)
            killed = time.monotonic()
            outcome.kills += 1
            outcome.kills_after_eviction += after_eviction and fired
            replicas.start(identity)  # the pod's container restarts in place
            probe = f"probe-{number}"
            cluster.rest().post(f"/api/v1/namespaces/{namespace}/pods",
                                probe_object(probe, namespace))
            def probed(p: str = probe) -> bool:
                replicas.restart_exited()
                return _probe_bound(invariants, lock, namespace, p)

            bound_at = _wait(probed, f"probe {probe} bound after kill {number + 1}")
            outcome.recoveries.append(bound_at - killed)
            why = (("right after an eviction" if fired else "no eviction within "
                    f"{scenario.trigger_patience:g}s") if after_eviction
                   else f"after {wanted} bindings" if fired else "bindings did not come")
            progress(f"{scenario.name} seed {scenario.seed}: kill {number + 1}/"
                     f"{scenario.kills} {why}; first binding {bound_at - killed:.2f}s later")
        submitter.join()
        _poll(lambda: _quiet(invariants, lock), scenario.settle_seconds)
        replicas.stop_all()  # then what it set going is seen through: the counts agree
        _poll(lambda: _quiet(invariants, lock), 10.0)
        _finish(outcome, invariants, lock)
        outcome.exit_codes = replicas.exit_codes
        outcome.unplanned_exits = list(replicas.unplanned_exits)
        outcome.tracebacks = replicas.tracebacks()
        outcome.evictions_logged = logged_evictions(replicas.logs)
        outcome.eviction_events, outcome.over_evicted_groups = _events(
            cluster, namespace, {g.name: g.pods for g in gangs})
        if submitter.failures:
            raise RuntimeError(f"submission failed: {submitter.failures[:3]}")
        outcome.duration = time.monotonic() - began
        return outcome
    finally:
        feed.stop()
        groups.stop()
        replicas.ensure_dead()
        cluster.kubectl("delete", "pods,podgroups.scheduling.phalanx.io", "--all", "-n",
                        namespace, "--grace-period=0", "--force", "--wait=false", check=False)
        with contextlib.suppress(TimeoutError):  # the next scenario starts on an empty cluster
            _wait(lambda: not cluster.rest().get(
                f"/api/v1/namespaces/{namespace}/pods").body.get("items"), "pods removed")
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        cluster.kubectl("delete", "lease", lease, "-n", LEASE_NAMESPACE, "--ignore-not-found",
                        check=False)


def _poll(check: Callable[[], bool], patience: float) -> bool:
    """Poll `check` every 5 ms for up to `patience` seconds; whether it came true."""
    deadline = time.monotonic() + patience
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _quiet(invariants: Invariants, lock: threading.Lock) -> bool:
    """No gang partly bound and no pod being deleted."""
    with lock:
        return not invariants.partial_since and not any(
            s.deleting for s in invariants.pods.values())


def _finish(outcome: MixOutcome, invariants: Invariants, lock: threading.Lock) -> None:
    with lock:
        now = time.monotonic()
        invariants.finish(now)
        outcome.longest_partial = invariants.longest_partial(now)
        outcome.overcommits = len(invariants.overcommits)
        states = invariants.gang_states()
        outcome.states = dict(sorted(Counter(states.values()).items()))
        outcome.lost = sorted(g for g, s in states.items() if s == "lost")
        outcome.evictions = dict(sorted(Counter(
            _why(e.why) for e in invariants.evicted.values()).items()))
        outcome.evicted_done = sum(e.done for e in invariants.evicted.values())
        outcome.evicted_twice = invariants.evicted_twice()
        outcome.holds = len(invariants.all_holds())
        outcome.nomination_violations = invariants.nomination_violations()


def _why(message: str) -> str:
    """The kind of eviction from the DisruptionTarget message the operator wrote."""
    if "preempted by" in message:
        return "preempted"
    if "reclaimed for" in message:
        return "reclaimed"
    return "lent room taken back" if "reserved for" in message else "unknown"


def logged_evictions(logs: list[Path]) -> dict[str, int]:
    """Pods the operator logged as evicted (`evicted` records), per reason."""
    found: Counter[str] = Counter()
    for log in logs:
        if not log.exists():
            continue
        for line in log.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError, TypeError):
                record = json.loads(line)
                if isinstance(record, dict) and record.get("event") == "evicted":
                    found[str(record.get("reason"))] += int(record.get("evicted") or 0)
    return dict(sorted(found.items()))


def _events(cluster: LocalCluster, namespace: str,
            sizes: dict[str, int]) -> tuple[dict[str, int], list[str]]:
    """Pods evicted per reason as the victims' Events say, and the groups whose Events
    add up to more pods than the group has (evicted twice)."""
    reply = cluster.rest(timeout=PATIENCE).get(f"/api/v1/namespaces/{namespace}/events")
    per_reason: Counter[str] = Counter()
    per_group: Counter[str] = Counter()
    for event in reply.body.get("items") or []:
        if event.get("reason") not in EVICTION_REASONS:
            continue
        match = EVENT_COUNT.match(str(event.get("message") or ""))
        if match is None:
            continue
        pods = int(match.group(1)) * int(event.get("count") or 1)
        per_reason[str(event["reason"])] += pods
        per_group[str((event.get("involvedObject") or {}).get("name"))] += pods
    over = sorted(f"{g}: {n} of {sizes.get(g, 0)}" for g, n in per_group.items()
                  if n > sizes.get(g, 0))
    return dict(sorted(per_reason.items())), over


def full_mix(seed: int, seeds: int) -> list[MixScenario]:
    return [MixScenario("preemption", seed + i, arrivals=80, submit_seconds=240, kills=20,
                        partial_bound_seconds=30)
            for i in range(seeds)]
