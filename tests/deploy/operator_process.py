"""`phalanx operator` as a real subprocess, as a pod runs it: JSON logs in a file, the
metrics server on a free port (read back from the log), scraped over HTTP."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from phalanx.cluster import LocalCluster

PATIENCE = 90.0  # upper bound for waits; the tests assert outcomes, not speed
SERVING = "serving metrics, health and readiness"
FAST = {  # settings for a quick loop in tests
    "PHALANX_DEBOUNCE_SECONDS": "0.1",
    "PHALANX_MAX_DELAY_SECONDS": "0.5",
    "PHALANX_CYCLE_PERIOD_SECONDS": "1",
}
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def account_kubeconfig(cluster: LocalCluster, path: Path, account: str = "phalanx",
                       namespace: str = "phalanx-system") -> Path:
    """A kubeconfig holding a TokenRequest token of the ServiceAccount (as in the pod)."""
    token = cluster.kubectl("create", "token", account, "-n", namespace).stdout.strip()
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": cluster.server,
                                               "certificate-authority": str(cluster.ca_cert)}}],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": account}}],
        "current-context": "c",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


class OperatorProcess:
    def __init__(self, name: str, kubeconfig: Path, workdir: Path,
                 env: dict[str, str] | None = None, args: Sequence[str] = ()) -> None:
        self.name = name
        self.log = workdir / f"{name}.log"
        clean = {k: v for k, v in os.environ.items() if not k.startswith("PHALANX_")}
        self._env = {**clean, **FAST, **(env or {})}
        self._argv = [sys.executable, "-m", "phalanx", "operator", f"--kubeconfig={kubeconfig}",
                      "--metrics-host=127.0.0.1", "--metrics-port=0", "--log-format=json",
                      *args]
        self.process: subprocess.Popen[bytes] | None = None
        self._port: int | None = None

    def start(self) -> OperatorProcess:
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                self._argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env=self._env, start_new_session=True, preexec_fn=_die_with_parent)
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def records(self) -> list[dict[str, Any]]:
        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict):
                    found.append(record)
        return found

    @property
    def port(self) -> int:
        if self._port is None:
            record = self.wait_for(lambda: next(
                (r for r in self.records() if r.get("event") == SERVING), None), "metrics port")
            self._port = int(record["port"])
        return self._port

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as r:
                return int(r.status), r.read().decode()
        except urllib.error.HTTPError as error:
            return int(error.code), error.read().decode()

    def metrics(self) -> Samples:
        status, text = self.get("/metrics")
        assert status == 200, text
        return {(s.name, frozenset(s.labels.items())): s.value
                for family in text_string_to_metric_families(text) for s in family.samples}

    def sample(self, name: str, **labels: str) -> float | None:
        return self.metrics().get((name, frozenset(labels.items())))

    def wait_for(self, check: Callable[[], Any], what: str) -> Any:
        deadline = time.monotonic() + PATIENCE
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"{self.name} exited ({self.process.returncode}) before "
                                     f"{what}; log:\n{self.log.read_text()[-3000:]}")
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: gave up waiting for {what}")
            time.sleep(0.2)

    def kill(self) -> None:
        """SIGKILL: nothing released, as a pod whose node vanished."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(PATIENCE)

    def stop(self) -> int:
        """SIGTERM, as kubelet stops a pod; the exit status."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(PATIENCE)

    def ensure_dead(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()
