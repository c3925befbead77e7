"""Every version of a namespace's pods, from a watch: what happened to them between two
polls (a pod evicted, a pod created and deleted again), which polling alone can miss."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from phalanx.cluster import LocalCluster, binaries


class PodHistory:
    """Every version of the namespace's pods, from a watch (`kubectl get -w`)."""

    def __init__(self, cluster: LocalCluster, namespace: str, path: Path) -> None:
        self._path = path
        self._out = path.open("w")
        self._process = subprocess.Popen(
            [str(binaries.binary("kubectl", cluster.bin_dir)), f"--kubeconfig={cluster.kubeconfig}",
             "get", "pods",
             "-n", namespace, "--watch", "--output-watch-events", "-o", "json"],
            stdout=self._out, stderr=subprocess.DEVNULL)

    def stop(self) -> None:
        self._process.terminate()
        self._process.wait(10)
        self._out.close()

    def versions(self, name: str) -> list[dict[str, Any]]:
        return [version for version in self._all() if version["metadata"]["name"] == name]

    def _all(self) -> list[dict[str, Any]]:
        text, decoder, found, at = self._path.read_text(), json.JSONDecoder(), [], 0
        while True:
            while at < len(text) and text[at].isspace():
                at += 1
            if at >= len(text):
                return found
            try:
                event, at = decoder.raw_decode(text, at)
            except ValueError:  # a version being written
                return found
            found.append(event["object"])

    def names(self) -> set[str]:
        """The name of every pod seen so far."""
        return {version["metadata"]["name"] for version in self._all()}
