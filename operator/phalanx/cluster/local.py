"""A real, local Kubernetes control plane for development and tests.

Design:
- etcd and kube-apiserver run as child processes on 127.0.0.1, on ports picked free at start,
  with data, certificates, logs and pids under one run directory; nothing listens on a fixed
  port, so several runs coexist.
- kube-apiserver serves TLS with a certificate from our own CA (pki.py), authenticates the
  admin by a random bearer token (group system:masters), authorizes with Node,RBAC (so a
  least-privilege ServiceAccount is really least-privilege) and signs ServiceAccount tokens
  (TokenRequest, `kubectl create token`, works).
- kube-controller-manager runs the controllers a user of a cluster relies on without naming
  them (components.CONTROLLERS): Jobs, ReplicaSets, Deployments and StatefulSets make their
  pods, the garbage collector deletes what a deleted owner owned, a deleted namespace is
  emptied and removed, each namespace gets its `default` ServiceAccount. Not run: the node
  lifecycle controller (nodes never turn NotReady, pods are never evicted) and the rest.
- The ServiceAccount admission plugin is disabled (a pod created before its namespace's
  `default` ServiceAccount would be refused, a race), so pods get no token volume; create
  ServiceAccounts explicitly when a test needs a token. TaintNodesByCondition is disabled
  too: it taints every new node `not-ready`, and only the node lifecycle controller would
  lift the taint.
- `workload_api=True` serves Kubernetes' Workload API (scheduling.k8s.io/v1beta1 and
  v1alpha3 on 1.37, v1alpha2 on 1.36) with the feature gates of the binaries' minor version
  on every component (components.py).
- kwok plays the nodes (Ready, leases) and the pods bound to them (Running; Succeeded or
  Failed after `sim.phalanx.io/complete-after-seconds` / `fail-after-seconds`; removed when
  deleted). kube-scheduler is not started unless asked (`start_scheduler`).
- Every process starts in its own process group and is recorded in `<run_dir>/pids`; `stop`
  ends them all, and `LocalCluster.attach(run_dir).stop()` ends a detached cluster. With
  `die_with_parent` (the default; set by tests) the kernel also stops them if this Python
  process dies.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from phalanx.cluster import binaries, components, dra_slices, pki, processes
from phalanx.cluster.description import (
    ClusterDescription,
    load_description,
    network_topology,
    node_objects,
    repository_root,
)
from phalanx.cluster.kwok_config import DEFAULT_LEASE_SECONDS, kwok_config_yaml
from phalanx.cluster.ports import free_ports
from phalanx.cluster.rest import RestClient

STOP_ORDER = ("kube-scheduler", "kube-controller-manager", "kwok", "kube-apiserver", "etcd")
STATE_FILE = "cluster.json"
CRD_DIR = repository_root(Path(__file__).resolve().parent) / "crds"
NODE_CREATE_WORKERS = 16


class ClusterError(RuntimeError):
    """The control plane did not come up; the message points at the log to read."""


@dataclass(frozen=True)
class ClusterState:
    """What a running cluster's clients need; saved as `<run_dir>/cluster.json`."""

    run_dir: Path
    server: str
    token: str
    ca_cert: Path
    kubeconfig: Path
    etcd_port: int
    apiserver_port: int
    workload_api: bool = False
    minor: int = components.SUPPORTED_MINORS[-1]  # Kubernetes 1.<minor>, of the binaries

    def to_json(self) -> str:
        data = {
            key: value if isinstance(value, bool) else str(value)
            for key, value in self.__dict__.items()
        }
        return json.dumps(data, indent=2) + "\n"

    @staticmethod
    def from_json(text: str) -> ClusterState:
        data = json.loads(text)
        return ClusterState(
            run_dir=Path(data["run_dir"]),
            server=data["server"],
            token=data["token"],
            ca_cert=Path(data["ca_cert"]),
            kubeconfig=Path(data["kubeconfig"]),
            etcd_port=int(data["etcd_port"]),
            apiserver_port=int(data["apiserver_port"]),
            workload_api=data.get("workload_api") is True,
            minor=int(data.get("minor", components.SUPPORTED_MINORS[-1])),
        )


class LocalCluster:
    """etcd + kube-apiserver + kube-controller-manager + kwok (+ kube-scheduler on demand)
    under `run_dir`."""

    def __init__(
        self,
        run_dir: str | Path,
        kubeconfig: str | Path | None = None,
        bin_dir: Path | None = None,
        die_with_parent: bool = True,
        kwok_lease_seconds: int = DEFAULT_LEASE_SECONDS,
        workload_api: bool = False,
        controller_manager: bool = True,
        audit_bindings: bool = False,
        large: bool = False,
    ) -> None:
        self.run_dir = Path(run_dir).resolve()
        self.kubeconfig = Path(kubeconfig).resolve() if kubeconfig else self.run_dir / "kubeconfig"
        self.bin_dir = bin_dir
        self.die_with_parent = die_with_parent
        self.kwok_lease_seconds = kwok_lease_seconds
        self.options = components.Options(workload_api=workload_api,
                                          audit_bindings=audit_bindings, large=large)
        self.controller_manager = controller_manager
        self._state: ClusterState | None = None
        self._started: dict[str, processes.Started] = {}  # what this object spawned
        self._manager_port: int | None = None  # kube-controller-manager's, if we started it

    # -- lifecycle ---------------------------------------------------------------------------

    @classmethod
    def attach(cls, run_dir: str | Path) -> LocalCluster:
        """A handle on a cluster started earlier (e.g. by `phalanx cluster up`)."""
        cluster = cls(run_dir, die_with_parent=False)
        state_file = cluster.run_dir / STATE_FILE
        if state_file.is_file():
            cluster._state = ClusterState.from_json(state_file.read_text())
            cluster.kubeconfig = cluster._state.kubeconfig
            cluster.options = components.Options(
                workload_api=cluster._state.workload_api, minor=cluster._state.minor)
        return cluster

    def start(self, timeout: float = 90.0, attempts: int = 3) -> LocalCluster:
        """Start etcd, kube-apiserver, kube-controller-manager and kwok; return once
        kube-apiserver's /readyz answers ok (`prepare` waits for the controller-manager).

        Free ports are picked before the processes bind them; if another process takes one
        in between, the start is retried on fresh ports.
        """
        tools = binaries.require_all(self.bin_dir)
        if self.options.workload_api:  # its gates and versions depend on the release
            version = binaries.kubernetes_version(tools["kube-apiserver"])
            self.options = replace(self.options, minor=components.minor_of(version))
        if processes.alive(self.run_dir):
            raise ClusterError(f"a cluster is already running in {self.run_dir}; stop it first")
        for attempt in range(1, attempts + 1):
            try:
                return self._start_once(tools, timeout)
            except ClusterError as error:
                if "address already in use" not in str(error) or attempt == attempts:
                    raise
        raise AssertionError("unreachable")

    def _start_once(self, tools: dict[str, Path], timeout: float) -> LocalCluster:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for stale in ("etcd", "logs", "pids", "pki"):
            shutil.rmtree(self.run_dir / stale, ignore_errors=True)
        credentials = pki.write_credentials(self.run_dir / "pki")
        etcd_port, peer_port, api_port = free_ports(3)
        state = ClusterState(
            run_dir=self.run_dir,
            server=f"https://127.0.0.1:{api_port}",
            token=credentials.admin_token,
            ca_cert=credentials.ca_cert,
            kubeconfig=self.kubeconfig,
            etcd_port=etcd_port,
            apiserver_port=api_port,
            workload_api=self.options.workload_api,
            minor=self.options.minor,
        )
        self._state = state
        internal_kubeconfig = self.internal_kubeconfig
        write_kubeconfig(internal_kubeconfig, state)
        if self.kubeconfig != internal_kubeconfig:
            write_kubeconfig(self.kubeconfig, state)
        (self.run_dir / STATE_FILE).write_text(state.to_json())
        (self.run_dir / STATE_FILE).chmod(0o600)  # holds the admin token
        try:
            self.spawn(
                "etcd", components.etcd_args(tools["etcd"], self.run_dir, etcd_port, peer_port,
                                             self.options.large)
            )
            if self.options.audit_bindings:
                (self.run_dir / components.AUDIT_POLICY_FILE).write_text(
                    json.dumps(components.AUDIT_POLICY))
            self.spawn(
                "kube-apiserver",
                components.apiserver_args(
                    tools["kube-apiserver"], self.run_dir, credentials, etcd_port, api_port,
                    self.options,
                ),
            )
            self._wait_ready(timeout)
            if self.controller_manager:
                (self._manager_port,) = free_ports(1)
                self.spawn(
                    "kube-controller-manager",
                    components.controller_manager_args(
                        tools["kube-controller-manager"], internal_kubeconfig, credentials,
                        self._manager_port, self.options,
                    ),
                )
            kwok_config = self.run_dir / "kwok.yaml"
            kwok_config.write_text(kwok_config_yaml(self.kwok_lease_seconds))
            self.spawn(
                "kwok",
                [
                    str(tools["kwok"]),
                    f"--kubeconfig={internal_kubeconfig}",
                    f"--config={kwok_config}",
                    "--v=WARN",  # INFO logs every node and pod patch
                ],
            )
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> list[str]:
        """Stop every process recorded in the run directory (also those of earlier runs).

        Returns the components that ignored SIGTERM and had to be killed.
        """
        killed = processes.stop(self.run_dir, STOP_ORDER)
        self._started.clear()
        return killed

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    def pids(self) -> dict[str, int]:
        """Live processes of this cluster by component name."""
        return {name: found.pid for name, found in processes.alive(self.run_dir).items()}

    # -- connection --------------------------------------------------------------------------

    @property
    def state(self) -> ClusterState:
        if self._state is None:
            raise ClusterError(f"no cluster started in {self.run_dir}")
        return self._state

    @property
    def internal_kubeconfig(self) -> Path:
        """The admin kubeconfig the cluster's own components use (kept in the run dir even
        when `kubeconfig` is written elsewhere)."""
        return self.run_dir / "kubeconfig.internal"

    @property
    def server(self) -> str:
        return self.state.server

    @property
    def pod_group_version(self) -> str:
        """The version of Kubernetes' own PodGroup this cluster serves with the Workload API
        on (`scheduling.k8s.io/v1beta1` on 1.37, `.../v1alpha2` on 1.36)."""
        return components.workload_api_for(self.state.minor).versions[0]

    @property
    def token(self) -> str:
        return self.state.token

    @property
    def ca_cert(self) -> Path:
        return self.state.ca_cert

    def rest(self, timeout: float = 10.0) -> RestClient:
        return RestClient(self.server, self.token, self.ca_cert, timeout)

    def is_ready(self) -> bool:
        try:
            response = self.rest(timeout=2.0).get("/readyz")
        except OSError:
            return False
        return response.status == 200

    # -- kubectl -----------------------------------------------------------------------------

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = 120.0,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this cluster; raises with stderr if `check` and it fails."""
        argv = [str(binaries.binary("kubectl", self.bin_dir)), f"--kubeconfig={self.kubeconfig}"]
        result = subprocess.run(
            [*argv, *args], input=input, capture_output=True, text=True, timeout=timeout
        )
        if check and result.returncode != 0:
            raise ClusterError(
                f"kubectl {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}"
            )
        return result

    def apply(
        self,
        objects: Iterable[Mapping[str, Any]] | str | Path,
        namespace: str | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """Server-side apply with strict field validation (unknown fields are errors).

        `objects` is a file or folder path, YAML text, or object dicts.
        """
        args = ["apply", "--server-side", "--field-manager=phalanx-tests", "--validate=strict"]
        if namespace:
            args += ["-n", namespace]
        if isinstance(objects, Path):
            return self.kubectl(*args, "-f", str(objects), check=check)
        text = objects if isinstance(objects, str) else yaml.safe_dump_all(list(objects))
        return self.kubectl(*args, "-f", "-", input=text, check=check)

    def install_crds(self, folder: Path = CRD_DIR, timeout: float = 60.0) -> list[str]:
        """Apply every CRD in `folder` and wait until all are Established."""
        self.apply(folder)
        names = self.kubectl("get", "-f", str(folder), "-o", "name").stdout.split()
        self.kubectl(
            "wait", "--for=condition=Established", f"--timeout={int(timeout)}s", *names,
            timeout=timeout + 10,
        )
        return names

    # -- nodes -------------------------------------------------------------------------------

    def prepare(self, description: ClusterDescription, timeout: float = 120.0) -> list[str]:
        """CRDs Established, the description's nodes Ready (a DRA description's GPUs
        published as ResourceSlices), NetworkTopology `default` applied,
        kube-controller-manager healthy.

        What both `phalanx cluster up` and the test fixture do after `start`.
        """
        self.install_crds()
        names = self.add_nodes(description, topology_name="default")
        dra_slices.publish(self.rest(timeout=30.0), description)  # DRA nodes' GPUs, if any
        self.wait_nodes_ready(len(names), timeout=timeout)
        if self._manager_port is not None:  # its start overlapped all of the above
            self._wait_healthy("kube-controller-manager", self._manager_port, timeout)
        return names

    def add_nodes(
        self, description: ClusterDescription | str | Path, topology_name: str | None = None
    ) -> list[str]:
        """Create the description's nodes concurrently (existing ones are left alone).

        With `topology_name`, also apply a NetworkTopology of that name (needs the CRDs).
        """
        if not isinstance(description, ClusterDescription):
            description = load_description(description)
        nodes = node_objects(description)
        client = self.rest(timeout=30.0)

        def create(node: dict[str, Any]) -> str:
            response = client.post("/api/v1/nodes", node)
            if response.status not in (201, 409):
                raise ClusterError(f"creating node {node['metadata']['name']}: {response.body}")
            return str(node["metadata"]["name"])

        with ThreadPoolExecutor(max_workers=NODE_CREATE_WORKERS) as pool:
            names = list(pool.map(create, nodes))
        if topology_name:
            self.apply([network_topology(description, topology_name)])
        return names

    def ready_nodes(self, label_selector: str = "type=kwok") -> list[str]:
        response = self.rest(timeout=30.0).get(f"/api/v1/nodes?labelSelector={label_selector}")
        if response.status != 200:
            raise ClusterError(f"listing nodes: {response.body}")
        return [
            item["metadata"]["name"]
            for item in response.body["items"]
            if any(
                condition.get("type") == "Ready" and condition.get("status") == "True"
                for condition in item.get("status", {}).get("conditions", [])
            )
        ]

    def wait_nodes_ready(self, count: int, timeout: float = 120.0) -> list[str]:
        """Wait until at least `count` kwok nodes are Ready; returns their names."""
        deadline = time.monotonic() + timeout
        ready: list[str] = []
        while time.monotonic() < deadline:
            ready = self.ready_nodes()
            if len(ready) >= count:
                return ready
            self._check_alive()
            time.sleep(0.5)
        raise ClusterError(
            f"only {len(ready)} of {count} nodes Ready after {timeout:.0f}s; "
            f"see {self.run_dir / 'logs' / 'kwok.log'}"
        )

    # -- kube-scheduler ----------------------------------------------------------------------

    def start_scheduler(self, qps: int = 500, burst: int = 1000, timeout: float = 60.0) -> int:
        """Start the real kube-scheduler (default profile, no leader election, the cluster's
        feature gates); returns its pid once /healthz answers.

        Idempotent: a scheduler already running for this cluster is kept.
        """
        running = self.pids().get("kube-scheduler")
        if running is not None:
            return running
        config = self.run_dir / "kube-scheduler.yaml"
        internal_kubeconfig = self.internal_kubeconfig
        config.write_text(
            yaml.safe_dump(
                components.scheduler_config(internal_kubeconfig, qps, burst), sort_keys=False
            )
        )
        (port,) = free_ports(1)
        started = self.spawn(
            "kube-scheduler",
            components.scheduler_args(
                binaries.binary("kube-scheduler", self.bin_dir), config, internal_kubeconfig,
                port, self.options,
            ),
        )
        try:
            self._wait_healthy("kube-scheduler", port, timeout)
        except BaseException:
            self.stop_scheduler()
            raise
        return started.pid

    def stop_scheduler(self) -> None:
        processes.stop_one(self.run_dir, "kube-scheduler")
        self._started.pop("kube-scheduler", None)

    # -- internals ---------------------------------------------------------------------------

    def spawn(
        self, name: str, argv: Sequence[str], env: dict[str, str] | None = None
    ) -> processes.Started:
        """Start a process that belongs to this cluster: recorded in its run directory (so
        `stop` ends it), logged to `logs/<name>.log`, dying with us when `die_with_parent`
        (only from the main thread: the kernel ties it to the starting thread)."""
        on_main_thread = threading.current_thread() is threading.main_thread()
        started = processes.start(
            name, argv, self.run_dir, die_with_parent=self.die_with_parent and on_main_thread,
            env=env,
        )
        self._started[name] = started
        return started

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.is_ready():
                return
            self._check_alive()
            time.sleep(0.2)
        raise ClusterError(
            f"kube-apiserver not ready after {timeout:.0f}s; "
            f"see {self.run_dir / 'logs' / 'kube-apiserver.log'}"
        )

    def _wait_healthy(self, name: str, port: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if components.healthz_ok(port):
                return
            self._check_alive()
            time.sleep(0.2)
        raise ClusterError(
            f"{name} not healthy after {timeout:.0f}s; see {self.run_dir / 'logs' / name}.log"
        )

    def _check_alive(self) -> None:
        """Raise if a recorded component has exited, with its exit code when we started it."""
        for name, identity in processes.recorded(self.run_dir).items():
            if processes.running(identity):
                continue
            started = self._started.get(name)
            code = started.exit_code(wait=5.0) if started is not None else None
            how = "exited" if code is None else f"exited with code {code}"
            log = self.run_dir / "logs" / f"{name}.log"
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
            raise ClusterError(f"{name} {how}; last lines of {log}:\n{tail}")


def write_kubeconfig(path: Path, state: ClusterState, context: str = "phalanx") -> None:
    ca = base64.b64encode(state.ca_cert.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": context, "cluster": {"server": state.server, "certificate-authority-data": ca}}
        ],
        "users": [{"name": pki.ADMIN_USER, "user": {"token": state.token}}],
        "contexts": [
            {"name": context, "context": {"cluster": context, "user": pki.ADMIN_USER}}
        ],
        "current-context": context,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
