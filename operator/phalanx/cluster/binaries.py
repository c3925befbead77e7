"""Where the control-plane binaries are: `.local/bin` of the checkout (built by `make tools`)."""

from __future__ import annotations

import os
import subprocess
from functools import cache
from pathlib import Path

from phalanx.cluster.description import repository_root

NAMES = (
    "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok"
)


class BinariesMissing(FileNotFoundError):
    """Raised with the command that builds what is missing."""


def bin_dir() -> Path:
    """`$PHALANX_BIN_DIR`, else `<repository>/.local/bin`."""
    override = os.environ.get("PHALANX_BIN_DIR")
    if override:
        return Path(override)
    return repository_root(Path(__file__).resolve().parent) / ".local" / "bin"


def binary(name: str, folder: Path | None = None) -> Path:
    path = (folder or bin_dir()) / name
    if not os.access(path, os.X_OK):
        raise BinariesMissing(
            f"{name} not found at {path}; run `make tools` to build etcd, kube-apiserver, "
            "kube-controller-manager, kube-scheduler, kubectl and kwok (cached under "
            "~/.cache/phalanx)"
        )
    return path


def require_all(folder: Path | None = None) -> dict[str, Path]:
    missing = [name for name in NAMES if not os.access((folder or bin_dir()) / name, os.X_OK)]
    if missing:
        raise BinariesMissing(
            f"missing {', '.join(missing)} in {folder or bin_dir()}; run `make tools` to build "
            "them (cached under ~/.cache/phalanx)"
        )
    return {name: binary(name, folder) for name in NAMES}


@cache
def kubernetes_version(apiserver: Path) -> str:
    """What the kube-apiserver binary says it is (`v1.37.2`): the Workload API's feature
    gates and API versions depend on the minor."""
    output = subprocess.run([str(apiserver), "--version"], capture_output=True, text=True,
                            check=True, timeout=30).stdout
    return output.split()[-1]
