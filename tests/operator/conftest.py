"""The operator under test, run in-process on the test's event loop against the real cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from operator_e2e import FAST

from operator_thread import operator_in_thread
from phalanx.cluster import LocalCluster
from phalanx.operator.kube.client import load_configuration
from phalanx.operator.main import Operator

NOT_READY = "node.kubernetes.io/not-ready"


def untaint_ready_nodes(cluster: LocalCluster) -> int:
    """Do what the node lifecycle controller would: drop `not-ready` from Ready nodes.

    kube-apiserver's TaintNodesByCondition admission taints every new node not-ready, and
    the local cluster runs no node lifecycle controller to lift it once kwok reports Ready.
    """
    rest = cluster.rest(timeout=30.0)
    lifted = 0
    for node in rest.get("/api/v1/nodes").body["items"]:
        taints = node["spec"].get("taints") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in node.get("status", {}).get("conditions", []))
        if ready and any(t["key"] == NOT_READY for t in taints):
            node["spec"]["taints"] = [t for t in taints if t["key"] != NOT_READY] or None
            rest.request("PUT", f"/api/v1/nodes/{node['metadata']['name']}", node)
            lifted += 1
    return lifted


@pytest.fixture
def ready_nodes(cluster: LocalCluster) -> LocalCluster:
    untaint_ready_nodes(cluster)
    return cluster


@pytest.fixture
def phalanx(ready_nodes: LocalCluster) -> Iterator[Operator]:
    """A running operator (mode both) whose cache is synced and first cycle is done."""

    async def make() -> Operator:
        return Operator(await load_configuration(str(ready_nodes.kubeconfig)), FAST)

    with operator_in_thread(make, "phalanx-operator") as operator:
        yield operator
    assert operator.loop.errors == 0
