"""GPUs through Dynamic Resource Allocation on the real control plane: kube-apiserver
serving resource.k8s.io/v1, kube-controller-manager's resourceclaim controller making
each pod's claim from its template (and deleting it when the pod goes), kwok nodes whose
GPUs are ResourceSlices only (examples/clusters/dra.yaml: 4 racks of 4 nodes x 8 GPUs),
and the operator in-process. The cluster is this module's own: its nodes offer no
nvidia.com/gpu, as a real DRA cluster's do not.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dra_objects import (
    allocated_nodes,
    claim_template,
    dra_gang,
    pod,
    podgroup,
    reserved_for,
    resource_claim,
)

from conftest import running_cluster
from operator_thread import operator_in_thread
from phalanx.cluster import LocalCluster, load_description
from phalanx.cluster.labels import TOPOLOGY_LEAF
from phalanx.config import Settings
from phalanx.config.settings import Mode
from phalanx.kubectl.main import main as kubectl_phalanx
from phalanx.operator.kube.client import Api, Reply, load_configuration
from phalanx.operator.main import Operator
from polling import eventually, get_json

pytestmark = pytest.mark.e2e

DRA_CLUSTER = Path(__file__).resolve().parents[2] / "examples" / "clusters" / "dra.yaml"
FAST = Settings(debounce_seconds=0.1, max_delay_seconds=0.5, cycle_period_seconds=1.0,
                backoff_initial_seconds=1.0, backoff_max_seconds=2.0)


@pytest.fixture(scope="module")
def dra_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    yield from running_cluster(tmp_path_factory.mktemp("dra-cluster"),
                               load_description(DRA_CLUSTER))


@pytest.fixture
def ns(dra_cluster: LocalCluster) -> Iterator[str]:
    name = f"dra-{secrets.token_hex(3)}"
    dra_cluster.kubectl("create", "namespace", name)
    yield name
    dra_cluster.kubectl("delete", "pods", "--all", "-n", name, "--grace-period=0", "--force",
                        check=False)
    eventually(lambda: not claims(dra_cluster, name), timeout=60)  # devices free again
    dra_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


@contextlib.contextmanager
def operator(cluster: LocalCluster, settings: Settings = FAST,
             hold_bindings: threading.Event | None = None) -> Iterator[Operator]:
    """The operator in a thread; with `hold_bindings`, its pods' bindings are held (sent
    once it is set): the operator stops after its claim writes and before any binding."""
    async def make() -> Operator:
        made = Operator(await load_configuration(str(cluster.kubeconfig)), settings)
        if hold_bindings is not None:
            binder = made.scheduler.writes.binder
            binder._api = HeldBindings(binder._api, hold_bindings)
        return made

    with operator_in_thread(make, "phalanx-dra") as running:
        yield running


class HeldBindings:
    """The real API, except that a pod's binding waits until `release` is set."""

    def __init__(self, api: Api, release: threading.Event) -> None:
        self._api = api
        self._release = release

    async def request(self, method: str, path: str, body: Any = None,
                      content_type: str = "application/json") -> Reply:
        if path.endswith("/binding"):
            while not self._release.is_set():
                await asyncio.sleep(0.05)
        return await self._api.request(method, path, body, content_type)


def apply(cluster: LocalCluster, objects: list[dict[str, Any]], namespace: str) -> None:
    cluster.apply(objects, namespace)


def pods(cluster: LocalCluster, namespace: str) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in get_json(cluster, "pods", "-n", namespace)["items"]}


def claims(cluster: LocalCluster, namespace: str) -> list[dict[str, Any]]:
    return list(get_json(cluster, "resourceclaims", "-n", namespace)["items"])


def bound(cluster: LocalCluster, namespace: str, count: int) -> dict[str, str] | None:
    nodes = {name: p["spec"].get("nodeName") for name, p in pods(cluster, namespace).items()}
    placed = {name: node for name, node in nodes.items() if node}
    return placed if len(placed) == count else None


def racks(cluster: LocalCluster, nodes: set[str]) -> set[str]:
    labels = {n["metadata"]["name"]: n["metadata"]["labels"]
              for n in get_json(cluster, "nodes")["items"]}
    return {labels[node][TOPOLOGY_LEAF] for node in nodes}


def claims_on_their_pods_nodes(cluster: LocalCluster, namespace: str,
                               placed: dict[str, str]) -> None:
    """Every pod's claim holds 8 devices of the pod's own node and is reserved for it."""
    found = {reserved_for(c)[0]: c for c in claims(cluster, namespace) if reserved_for(c)}
    assert sorted(found) == sorted(placed)
    for name, node in placed.items():
        claim = found[name]
        assert allocated_nodes(claim) == {node}, claim
        assert len(claim["status"]["allocation"]["devices"]["results"]) == 8
        terms = claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"]
        assert terms[0]["matchFields"][0]["values"] == [node]
        assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]


def condition(cluster: LocalCluster, namespace: str, group: str) -> dict[str, Any] | None:
    body = json.loads(cluster.kubectl("get", "podgroups.scheduling.phalanx.io", group, "-n",
                                      namespace, "-o", "json").stdout)
    for entry in (body.get("status") or {}).get("conditions") or []:
        if entry.get("status") == "False" and entry.get("message"):
            return dict(entry)
    return None


def test_a_gang_of_dra_pods_gets_its_claims_in_one_rack_and_the_room_back_when_it_ends(
        dra_cluster: LocalCluster, ns: str) -> None:
    apply(dra_cluster, [claim_template("h100x8"), *dra_gang("train", 4, "h100x8")], ns)
    with operator(dra_cluster):
        placed = eventually(lambda: bound(dra_cluster, ns, 4), timeout=60)
        assert placed, pods(dra_cluster, ns)
        assert len(set(placed.values())) == 4
        assert len(racks(dra_cluster, set(placed.values()))) == 1
        claims_on_their_pods_nodes(dra_cluster, ns, placed)

        # The pods end: kube-controller-manager deletes their claims; the devices are
        # free again, and the whole cluster (16 nodes, four gangs of 4) is used.
        dra_cluster.kubectl("delete", "pods", "--all", "-n", ns, "--grace-period=0",
                            "--force")
        assert eventually(lambda: not claims(dra_cluster, ns), timeout=60)
        apply(dra_cluster, [o for g in range(4) for o in dra_gang(f"again-{g}", 4, "h100x8")],
              ns)
        placed = eventually(lambda: bound(dra_cluster, ns, 16), timeout=90)
        assert placed, pods(dra_cluster, ns)
        assert len(set(placed.values())) == 16
        claims_on_their_pods_nodes(dra_cluster, ns, placed)
        for g in range(4):
            nodes = {node for name, node in placed.items() if name.startswith(f"again-{g}-")}
            assert len(racks(dra_cluster, nodes)) == 1


def test_a_selector_no_device_matches_is_named_in_the_podgroup_condition(
        dra_cluster: LocalCluster, ns: str) -> None:
    apply(dra_cluster, [claim_template("b200", product="NVIDIA B200"),
                        *dra_gang("nomatch", 2, "b200")], ns)
    with operator(dra_cluster):
        found = eventually(lambda: condition(dra_cluster, ns, "nomatch"), timeout=60)
        assert found, "no condition"
        assert "B200" in found["message"] or "productName" in found["message"], found
        assert not any(allocated_nodes(c) for c in claims(dra_cluster, ns))
        assert bound(dra_cluster, ns, 0) == {}


def test_a_gang_wider_than_any_rack_waits_whole_with_no_claim_allocated(
        dra_cluster: LocalCluster, ns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    apply(dra_cluster, [claim_template("h100x8"), *dra_gang("wide", 5, "h100x8")], ns)
    with operator(dra_cluster) as running:
        found = eventually(lambda: condition(dra_cluster, ns, "wide"), timeout=60)
        assert found, "no condition"
        cycles = running.loop.cycles
        eventually(lambda: running.loop.cycles >= cycles + 2, timeout=30)  # decided again
        assert len(claims(dra_cluster, ns)) == 5  # made by kube-controller-manager
        assert not any(allocated_nodes(c) for c in claims(dra_cluster, ns))
        assert bound(dra_cluster, ns, 0) == {}
    # `kubectl phalanx explain` names the claim, its request and its selector, both in
    # what the operator wrote and in its own fresh plan (which reads the DRA objects).
    monkeypatch.setenv("PHALANX_KUBECTL", str(dra_cluster.bin_dir / "kubectl")
                       if dra_cluster.bin_dir else "kubectl")
    out = io.StringIO()
    assert kubectl_phalanx(["--kubeconfig", str(dra_cluster.kubeconfig), "explain", "pg",
                            "wide", "-n", ns], out=out) == 0
    text = out.getvalue()
    now = next(line for line in text.splitlines() if line.startswith("Now:"))
    for words in ("wide-0-gpus", "request gpus", "productName", "NVIDIA H100 80GB HBM3"):
        assert words in now, text
        assert words in found["message"], found


def test_claims_allocated_by_an_operator_stopped_before_its_bindings_are_freed(
        dra_cluster: LocalCluster, ns: str) -> None:
    apply(dra_cluster, [claim_template("h100x8"), *dra_gang("held", 4, "h100x8")], ns)
    never = threading.Event()
    with operator(dra_cluster, hold_bindings=never):
        def all_allocated() -> bool:
            found = claims(dra_cluster, ns)
            return len(found) == 4 and all(allocated_nodes(c) and reserved_for(c)
                                           for c in found)
        assert eventually(all_allocated, timeout=60)
        assert bound(dra_cluster, ns, 0) == {}
    # Stopped between allocation and binding: 4 claims hold 32 devices for unbound pods.
    assert all(allocated_nodes(c) for c in claims(dra_cluster, ns))
    # One pod goes, so the gang cannot be placed: the next operator must free the others.
    dra_cluster.kubectl("delete", "pod", "held-3", "-n", ns, "--grace-period=0", "--force")
    with operator(dra_cluster):
        def freed() -> bool:
            found = claims(dra_cluster, ns)
            return len(found) == 3 and not any(allocated_nodes(c) or reserved_for(c)
                                               for c in found)
        assert eventually(freed, timeout=60), claims(dra_cluster, ns)
        assert bound(dra_cluster, ns, 0) == {}
        # The missing pod is back: the gang is placed, its claims allocated afresh.
        apply(dra_cluster, [pod("held-3", "held", "h100x8")], ns)
        placed = eventually(lambda: bound(dra_cluster, ns, 4), timeout=60)
        assert placed, pods(dra_cluster, ns)
        claims_on_their_pods_nodes(dra_cluster, ns, placed)


def test_gate_mode_pins_nodes_and_kube_scheduler_allocates_there(
        dra_cluster: LocalCluster, ns: str) -> None:
    apply(dra_cluster, [claim_template("h100x8"), *dra_gang("gated", 4, "h100x8", gated=True)],
          ns)
    dra_cluster.start_scheduler()
    try:
        with operator(dra_cluster, FAST.model_copy(update={"mode": Mode.GATE})):
            placed = eventually(lambda: bound(dra_cluster, ns, 4), timeout=90)
            assert placed, pods(dra_cluster, ns)
            assert len(racks(dra_cluster, set(placed.values()))) == 1
            for name, p in pods(dra_cluster, ns).items():  # the nodes Phalanx pinned
                terms = p["spec"]["affinity"]["nodeAffinity"][
                    "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                assert placed[name] in json.dumps(terms)
            claims_on_their_pods_nodes(dra_cluster, ns, placed)
    finally:
        dra_cluster.stop_scheduler()


def test_a_claim_named_by_every_pod_of_a_gang_is_allocated_once_for_all_of_them(
        dra_cluster: LocalCluster, ns: str) -> None:
    """One ResourceClaim shared by a gang (as a ComputeDomain's channel is): allocated
    once, reserved for every pod, all bound (its devices are one node's, so all go there).
    When the pods end, kube-controller-manager removes them from `reservedFor` and, the
    claim being unused from then on, clears its allocation (claim_recovery.py's note)."""
    gang = [podgroup("shared", 3),
            *(pod(f"shared-{i}", "shared", "", claim="domain") for i in range(3))]
    apply(dra_cluster, [resource_claim("domain", count=2), *gang], ns)
    with operator(dra_cluster):
        placed = eventually(lambda: bound(dra_cluster, ns, 3), timeout=60)
        assert placed, pods(dra_cluster, ns)
        (claim,) = claims(dra_cluster, ns)
        assert sorted(reserved_for(claim)) == sorted(placed)
        assert allocated_nodes(claim) == set(placed.values())  # one node
        assert len(claim["status"]["allocation"]["devices"]["results"]) == 2
        dra_cluster.kubectl("delete", "pods", "--all", "-n", ns, "--grace-period=0",
                            "--force")

        def freed() -> dict[str, Any] | None:
            (left,) = claims(dra_cluster, ns)  # not from a template: it stays
            status = left.get("status") or {}
            return left if not status.get("allocation") and not status.get(
                "reservedFor") else None
        assert eventually(freed, timeout=60), claims(dra_cluster, ns)
    dra_cluster.kubectl("delete", "resourceclaim", "domain", "-n", ns)
