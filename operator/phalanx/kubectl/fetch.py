"""Reading the cluster by running `kubectl get -o json`, with the user's kubeconfig and context.

Shelling out keeps the plugin's credentials exactly kubectl's (exec plugins, OIDC, contexts)
without re-implementing kubeconfig handling.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from phalanx.core.model.names import API_GROUP as GROUP

CLUSTER_KINDS = (
    "nodes",
    f"queues.{GROUP}",
    f"networktopologies.{GROUP}",
    "priorityclasses.scheduling.k8s.io",
)
NAMESPACED_KINDS = ("pods", f"podgroups.{GROUP}")
# Dynamic Resource Allocation (resource.k8s.io/v1), as the operator watches it: a cluster
# that does not serve it, or a user who may not read it, gets a plan without devices.
DRA_CLUSTER_KINDS = ("resourceslices.resource.k8s.io", "deviceclasses.resource.k8s.io")
DRA_NAMESPACED_KINDS = ("resourceclaims.resource.k8s.io",
                        "resourceclaimtemplates.resource.k8s.io")

Obj = dict[str, Any]
Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


class PluginError(RuntimeError):
    """A failure to report to the user in one line (exit status 1)."""


def run_process(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120, check=False)


def default_binary() -> str:
    """`$PHALANX_KUBECTL`, else `kubectl` on PATH."""
    return os.environ.get("PHALANX_KUBECTL", "kubectl")


@dataclass(frozen=True)
class Kubectl:
    """kubectl with the connection flags the user gave the plugin."""

    binary: str = "kubectl"
    kubeconfig: str | None = None
    context: str | None = None
    runner: Runner = run_process

    def command(self, *args: str) -> list[str]:
        flags = []
        if self.kubeconfig:
            flags += ["--kubeconfig", self.kubeconfig]
        if self.context:
            flags += ["--context", self.context]
        return [self.binary, *flags, *args]

    def attempt(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run `kubectl ARGS`, whatever its exit status (the caller reads it)."""
        try:
            return self.runner(self.command(*args))
        except FileNotFoundError:
            raise PluginError(
                f"{self.binary} not found; install kubectl or set PHALANX_KUBECTL"
            ) from None

    def get_json(self, *args: str) -> Obj:
        return self._json(self.attempt("get", *args, "-o", "json"), f"kubectl get {' '.join(args)}")

    def raw(self, path: str) -> Obj:
        """`kubectl get --raw PATH` (discovery documents), parsed."""
        return self._json(self.attempt("get", "--raw", path), f"kubectl get --raw {path}")

    @staticmethod
    def _json(done: subprocess.CompletedProcess[str], what: str) -> Obj:
        if done.returncode != 0:
            raise PluginError(done.stderr.strip() or f"{what} failed")
        data = json.loads(done.stdout or "{}")
        return data if isinstance(data, dict) else {}

    def items(self, *args: str) -> list[Obj]:
        data = self.get_json(*args)
        if "items" in data:
            return list(data["items"])
        return [data] if data else []


def cluster_objects(kubectl: Kubectl) -> list[Obj]:
    """Everything a scheduling cycle reads: the same kinds the operator watches."""
    return [
        *kubectl.items(",".join(CLUSTER_KINDS)),
        *kubectl.items(",".join(NAMESPACED_KINDS), "--all-namespaces"),
        *_optional(kubectl, ",".join(DRA_CLUSTER_KINDS)),
        *_optional(kubectl, ",".join(DRA_NAMESPACED_KINDS), "--all-namespaces"),
    ]


def _optional(kubectl: Kubectl, *args: str) -> list[Obj]:
    """Items of kinds the cluster may not serve: none when kubectl cannot read them."""
    try:
        return kubectl.items(*args)
    except PluginError:
        return []


def pod_group(kubectl: Kubectl, name: str, namespace: str | None) -> Obj:
    args = [f"podgroups.{GROUP}", name]
    if namespace:
        args += ["--namespace", namespace]
    (group,) = kubectl.items(*args)
    return group
