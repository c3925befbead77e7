"""Helm (built from its Go module by hack/helm.sh) and charts/phalanx as Helm renders it, with
what the chart/kustomize comparison needs: the objects keyed alike, told apart only where the
two tools differ on purpose."""

from __future__ import annotations

import copy
import functools
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from .rendering import REPO, Obj

CHART = REPO / "charts" / "phalanx"
HELM_SCRIPT = REPO / "hack" / "helm.sh"
RELEASE = "phalanx"
CONFIG_MAP = "phalanx-config"
# kustomize's configMapGenerator names the settings ConfigMap phalanx-config-<hash of its
# content> (10 characters); the chart names it phalanx-config and rolls the pods with a
# checksum/config annotation instead. The comparison maps the one onto the other.
HASHED_CONFIG_MAP = re.compile(rf"^{CONFIG_MAP}-[a-z0-9]{{10}}$")
CHECKSUM_ANNOTATION = "checksum/config"
HELM_LABELS = ("app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "helm.sh/chart")
# kustomize labels every object app.kubernetes.io/part-of=phalanx, the CRDs too; Helm installs
# crds/ as the files are (it templates nothing there), so the chart's CRDs lack that label.
PART_OF = "app.kubernetes.io/part-of"

Key = tuple[str, str, str]  # kind, namespace ("" if cluster-scoped), name


@functools.cache
def helm_binary() -> Path:
    """hack/helm.sh's helm: the script builds it the first time (minutes), then only links."""
    result = subprocess.run(["bash", str(HELM_SCRIPT)], capture_output=True, text=True,
                            timeout=3600, check=False)
    if result.returncode != 0:
        pytest.fail(f"hack/helm.sh failed:\n{result.stdout}\n{result.stderr}")
    return REPO / ".local" / "bin" / "helm"


def helm(*args: str, kubeconfig: Path | None = None, check: bool = True,
         timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """Run helm; with `check`, a failure fails the test with helm's own message."""
    argv = [str(helm_binary()), *args]
    if kubeconfig is not None:
        argv.append(f"--kubeconfig={kubeconfig}")
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if check and result.returncode != 0:
        pytest.fail(f"helm {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
    return result


def sets(values: dict[str, str]) -> list[str]:
    return [arg for key, value in values.items() for arg in ("--set", f"{key}={value}")]


def render_chart(values: dict[str, str] | None = None, chart: Path | str = CHART,
                 extra: Sequence[str] = ()) -> list[Obj]:
    """`helm template` of the chart, CRDs included, as the objects it would install."""
    result = helm("template", RELEASE, str(chart), "--include-crds", *sets(values or {}), *extra)
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def key(obj: Obj) -> Key:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


def keyed(objects: list[Obj]) -> dict[Key, Obj]:
    found: dict[Key, Obj] = {}
    for obj in objects:
        assert key(obj) not in found, f"{key(obj)} twice"
        found[key(obj)] = obj
    return found


def unhash_config_map(objects: list[Obj]) -> list[Obj]:
    """kustomize's output with its phalanx-config-<hash> named phalanx-config, in the ConfigMap
    and in the Deployment's volume; fails unless there is exactly one such ConfigMap."""
    hashed = [o["metadata"]["name"] for o in objects
              if o["kind"] == "ConfigMap" and HASHED_CONFIG_MAP.match(o["metadata"]["name"])]
    assert len(hashed) == 1, f"expected one {CONFIG_MAP}-<hash> ConfigMap, found {hashed}"
    renamed = copy.deepcopy(objects)
    for obj in renamed:
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == hashed[0]:
            obj["metadata"]["name"] = CONFIG_MAP
        for volume in pod_volumes(obj):
            if (volume.get("configMap") or {}).get("name") == hashed[0]:
                volume["configMap"]["name"] = CONFIG_MAP
    return renamed


def pod_volumes(obj: Obj) -> list[Obj]:
    if obj["kind"] != "Deployment":
        return []
    volumes: list[Obj] = obj["spec"]["template"]["spec"].get("volumes", [])
    return volumes


def without_helm_bookkeeping(obj: Obj) -> Obj:
    """The object less what only Helm adds: its labels, the checksum that rolls the pods."""
    clean = copy.deepcopy(obj)
    labels = clean["metadata"].get("labels") or {}
    for name in HELM_LABELS:
        labels.pop(name, None)
    if obj["kind"] == "Deployment":
        annotations = clean["spec"]["template"]["metadata"].get("annotations") or {}
        annotations.pop(CHECKSUM_ANNOTATION, None)
    return clean


def without_label(obj: Obj, name: str) -> Obj:
    clean = copy.deepcopy(obj)
    labels = clean["metadata"].get("labels") or {}
    labels.pop(name, None)
    if not labels:
        clean["metadata"].pop("labels", None)
    return clean


def config_data(obj: Obj) -> dict[str, object]:
    """The settings ConfigMap's data, parsed (the chart writes it back out of YAML: the same
    settings, without the shipped file's comments)."""
    return {name: yaml.safe_load(text) for name, text in obj["data"].items()}


def differences(kustomized: list[Obj], charted: list[Obj]) -> list[str]:
    """Where the chart's objects differ from kustomize's, one line each (empty: none)."""
    ours, theirs = keyed(charted), keyed(unhash_config_map(kustomized))
    found = [f"only in kustomize: {k}" for k in sorted(theirs.keys() - ours.keys())]
    found += [f"only in the chart: {k}" for k in sorted(ours.keys() - theirs.keys())]
    for k in sorted(ours.keys() & theirs.keys()):
        mine, other = without_helm_bookkeeping(ours[k]), theirs[k]
        if k[0] == "CustomResourceDefinition":
            other = without_label(other, PART_OF)
        if k == ("ConfigMap", other["metadata"].get("namespace", ""), CONFIG_MAP):
            if config_data(mine) != config_data(other):
                found.append(f"{k}: settings differ")
            mine, other = ({**o, "data": None} for o in (mine, other))
        if mine != other:
            found.append(f"{k} differs:\n  chart:     {mine}\n  kustomize: {other}")
    return found
