"""The manifests as `kubectl apply -k manifests/` would send them."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"

Obj = dict[str, Any]


def kubectl_binary() -> str:
    """The project's kubectl (`make tools`), else one on PATH: its built-in kustomize renders."""
    local = REPO / ".local" / "bin" / "kubectl"
    if os.access(local, os.X_OK):
        return str(local)
    found = shutil.which("kubectl")
    if found is None:
        pytest.fail("kubectl is needed to render manifests/ (run `make tools`)")
    return found


def render(path: Path) -> list[Obj]:
    result = subprocess.run(
        [kubectl_binary(), "kustomize", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def only(objects: list[Obj], kind: str, name: str | None = None) -> Obj:
    matches = [
        o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]
    assert len(matches) == 1, f"expected one {kind} {name or ''}, found {len(matches)}"
    return matches[0]
