"""Leader election on the real API server, as the operator's ServiceAccount: one leader,
takeover after the leader dies, immediate handover when it stops gracefully."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from datetime import datetime

import pytest
from kubernetes_asyncio import client as k8s

from phalanx.cluster import LocalCluster
from phalanx.config import LeaderElection
from phalanx.leader import LeaderElector
from phalanx.operator.kube.client import KubeApi

pytestmark = pytest.mark.e2e

NAMESPACE = "phalanx-system"
LEASE = "phalanx-leader"  # the only lease name the Role lets the account update
SETTINGS = LeaderElection(
    lease_name=LEASE,
    lease_namespace=NAMESPACE,
    lease_duration_seconds=3,
    renew_deadline_seconds=2,
    retry_period_seconds=0.5,
)
PATIENCE = 60.0  # generous upper bound for waits; the test asserts order, not speed


@pytest.fixture
async def account_api(installed_rbac: LocalCluster) -> AsyncIterator[KubeApi]:
    """Raw API access with a TokenRequest token of system:serviceaccount:phalanx-system:phalanx."""
    cluster = installed_rbac
    cluster.kubectl("delete", "lease", LEASE, "-n", NAMESPACE, "--ignore-not-found")
    token = cluster.kubectl("create", "token", "phalanx", "-n", NAMESPACE).stdout.strip()
    configuration = k8s.Configuration(host=cluster.server)
    configuration.api_key = {"BearerToken": token}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    configuration.ssl_ca_cert = str(cluster.ca_cert)
    api = KubeApi(k8s.ApiClient(configuration))
    yield api
    await api.close()
    cluster.kubectl("delete", "lease", LEASE, "-n", NAMESPACE, "--ignore-not-found")


def lease_spec(cluster: LocalCluster) -> dict[str, object]:
    out = cluster.kubectl("get", "lease", LEASE, "-n", NAMESPACE, "-o", "json").stdout
    spec: dict[str, object] = json.loads(out)["spec"]
    return spec


async def held_past_one_lease(api: KubeApi, holder: str) -> None:
    """Wait, reading the lease as the account does, until `holder` has renewed it for
    longer than one lease duration: by then a follower that did not see the renewals
    would have taken it over. Measured on the lease's own renewTime, not by sleeping."""
    path = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{LEASE}"
    first: datetime | None = None
    async with asyncio.timeout(PATIENCE):
        while True:
            spec = (await api.request("GET", path)).body["spec"]
            assert spec["holderIdentity"] == holder
            renewed = datetime.fromisoformat(spec["renewTime"])
            first = first or renewed
            if (renewed - first).total_seconds() > SETTINGS.lease_duration_seconds:
                return
            await asyncio.sleep(0.1)


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(PATIENCE):
        while not condition():
            await asyncio.sleep(0.1)


async def test_one_leader_takeover_on_death_and_handover_on_stop(
    installed_rbac: LocalCluster, account_api: KubeApi
) -> None:
    cluster = installed_rbac
    denied = await account_api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/secrets")
    assert denied.status == 403  # really the ServiceAccount, not the admin
    events: list[str] = []

    def elector(name: str) -> LeaderElector:
        async def started() -> None:
            events.append(f"{name} started")

        async def stopped() -> None:
            events.append(f"{name} stopped")

        return LeaderElector(account_api, SETTINGS, name, started, stopped)

    a, b = elector("replica-a"), elector("replica-b")
    stops = {a: asyncio.Event(), b: asyncio.Event()}
    tasks = {e: asyncio.create_task(e.run(stops[e])) for e in (a, b)}
    try:
        await until(lambda: a.is_leader or b.is_leader)
        leader, follower = (a, b) if a.is_leader else (b, a)
        await held_past_one_lease(account_api, leader.identity)
        assert leader.is_leader and not follower.is_leader
        assert lease_spec(cluster)["holderIdentity"] == leader.identity

        # The leader dies without releasing: the follower takes over once the lease expires.
        tasks[leader].cancel()
        await asyncio.gather(tasks[leader], return_exceptions=True)
        await until(lambda: follower.is_leader)
        spec = lease_spec(cluster)
        assert spec["holderIdentity"] == follower.identity
        assert spec["leaseTransitions"] == 1

        # A graceful stop releases the lease at once.
        stops[follower].set()
        await tasks[follower]
        assert not follower.is_leader
        assert not lease_spec(cluster).get("holderIdentity")
        assert events == [
            f"{leader.identity} started",
            f"{leader.identity} stopped",
            f"{follower.identity} started",
            f"{follower.identity} stopped",
        ]
    finally:
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
