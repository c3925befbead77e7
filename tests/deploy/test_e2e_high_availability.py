"""Two operator replicas with leader election, as the Deployment runs them: the standby
takes over when the leader dies, and gangs keep being placed."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s

from phalanx.cluster import LocalCluster
from phalanx.config import LeaderElection
from phalanx.leader import STOPPED, LeaderElector, run_replica
from phalanx.operator.client import KubeApi
from phalanx.operator.main import Operator
from phalanx.operator.settings import OperatorConfig

pytestmark = pytest.mark.e2e

NAMESPACE = "phalanx-system"
LEASE = "phalanx-leader"
ELECTION = LeaderElection(
    lease_name=LEASE,
    lease_namespace=NAMESPACE,
    lease_duration_seconds=3,
    renew_deadline_seconds=2,
    retry_period_seconds=0.5,
)
FAST = OperatorConfig(debounce_seconds=0.1, max_delay_seconds=0.5, period_seconds=1.0)
PATIENCE = 90.0  # upper bound for waits; nothing here asserts speed
GROUP_LABEL = "scheduling.phalanx.io/pod-group"


def account_configuration(cluster: LocalCluster) -> k8s.Configuration:
    token = cluster.kubectl("create", "token", "phalanx", "-n", NAMESPACE).stdout.strip()
    configuration = k8s.Configuration(host=cluster.server)
    configuration.api_key = {"BearerToken": token}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    configuration.ssl_ca_cert = str(cluster.ca_cert)
    return configuration


class Replica:
    """One operator replica on its own thread and event loop, like one pod."""

    def __init__(self, name: str, configuration: k8s.Configuration) -> None:
        self.name = name
        self.configuration = configuration
        self.ready = threading.Event()
        self.operators: list[Operator] = []
        self.outcome: list[Any] = []
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)
        self.elector: LeaderElector
        self._loop: asyncio.AbstractEventLoop
        self._task: asyncio.Task[int]
        self._stop: asyncio.Event

    def start(self) -> Replica:
        self.thread.start()
        assert self.ready.wait(PATIENCE)
        return self

    @property
    def leading(self) -> bool:
        return (
            self.elector.is_leader and bool(self.operators) and self.operators[-1].loop.cycles > 0
        )

    def kill(self) -> None:
        """Die without releasing anything, as a pod whose node vanished."""
        self._loop.call_soon_threadsafe(self._task.cancel)
        self.thread.join(PATIENCE)

    def shut_down(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(PATIENCE)

    def _main(self) -> None:
        try:
            self.outcome.append(asyncio.run(self._serve()))
        except BaseException as error:  # inspected by the test
            self.outcome.append(error)

    async def _serve(self) -> int:
        api = KubeApi(k8s.ApiClient(self.configuration))
        self.elector = LeaderElector(api, ELECTION, self.name)
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()

        async def lead(stop_leading: asyncio.Event) -> None:
            operator = Operator(self.configuration, FAST)
            self.operators.append(operator)
            await operator.run(stop=stop_leading)

        self._task = asyncio.ensure_future(run_replica(self.elector, lead, self._stop))
        self.ready.set()
        try:
            return await self._task
        finally:
            await api.close()


def get_json(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def gang(name: str, size: int) -> list[dict[str, Any]]:
    group = {
        "apiVersion": "scheduling.phalanx.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": size},
    }
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{name}-{i}", "labels": {GROUP_LABEL: name}},
            "spec": {
                "schedulerName": "phalanx",
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {
                            "requests": {"nvidia.com/gpu": "8"},
                            "limits": {"nvidia.com/gpu": "8"},
                        },
                    }
                ],
            },
        }
        for i in range(size)
    ]
    return [group, *pods]


def wait_for(check: Callable[[], bool], what: str) -> None:
    async def poll() -> None:
        async with asyncio.timeout(PATIENCE):
            while not await asyncio.to_thread(check):
                await asyncio.sleep(0.3)

    try:
        asyncio.run(poll())
    except TimeoutError:
        pytest.fail(f"gave up waiting: {what}")


def running(cluster: LocalCluster, namespace: str, name: str) -> bool:
    group = get_json(cluster, "podgroups.scheduling.phalanx.io", name, "-n", namespace)
    return (group.get("status") or {}).get("phase") == "Running"


@pytest.fixture
def replicas(installed_rbac: LocalCluster) -> Iterator[list[Replica]]:
    installed_rbac.kubectl("delete", "lease", LEASE, "-n", NAMESPACE, "--ignore-not-found")
    started: list[Replica] = []
    yield started
    for replica in started:
        if replica.thread.is_alive():
            replica.kill()
    installed_rbac.kubectl("delete", "lease", LEASE, "-n", NAMESPACE, "--ignore-not-found")


def test_standby_takes_over_when_the_leader_dies(
    installed_rbac: LocalCluster, namespace: str, replicas: list[Replica]
) -> None:
    cluster = installed_rbac
    first = Replica("replica-a", account_configuration(cluster)).start()
    replicas.append(first)
    wait_for(lambda: first.leading, "replica-a leads")
    second = Replica("replica-b", account_configuration(cluster)).start()
    replicas.append(second)

    cluster.apply(gang("before", 2), namespace)
    wait_for(lambda: running(cluster, namespace, "before"), "gang placed by replica-a")
    assert not second.elector.is_leader and not second.operators  # a standby runs nothing

    first.kill()
    assert not first.thread.is_alive()
    wait_for(lambda: second.leading, "replica-b takes over")
    lease = get_json(cluster, "lease", LEASE, "-n", NAMESPACE)["spec"]
    assert (lease["holderIdentity"], lease["leaseTransitions"]) == ("replica-b", 1)

    cluster.apply(gang("after", 2), namespace)
    wait_for(lambda: running(cluster, namespace, "after"), "gang placed by replica-b")
    pods = get_json(cluster, "pods", "-n", namespace)["items"]
    assert all(p["spec"].get("nodeName") for p in pods)

    second.shut_down()
    assert second.outcome == [STOPPED]
    assert not get_json(cluster, "lease", LEASE, "-n", NAMESPACE)["spec"].get("holderIdentity")
