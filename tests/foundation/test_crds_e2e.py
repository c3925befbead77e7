"""The CRDs on a real API server: installed, examples accepted, malformed objects rejected."""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.cluster import LocalCluster

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = [
    "queue.yaml", "topology.yaml", "gang-rack.yaml", "volcano-style.yaml", "gpu-sharing.yaml",
]
CRD_NAMES = [
    "podgroups.scheduling.phalanx.io",
    "queues.scheduling.phalanx.io",
    "networktopologies.scheduling.phalanx.io",
]


def test_crds_are_established_with_short_names_and_category(cluster: LocalCluster) -> None:
    for name in CRD_NAMES:
        crd = json.loads(cluster.kubectl("get", "crd", name, "-o", "json").stdout)
        conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conditions["Established"] == "True"
        assert conditions["NamesAccepted"] == "True"
    resources = cluster.kubectl("api-resources", "--api-group=scheduling.phalanx.io").stdout
    assert "pg" in resources.split() and "q" in resources.split()
    for short in ("pg", "q", "ntopo", "phalanx"):
        cluster.kubectl("get", short, "-A")


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_applies_with_strict_validation(
    cluster: LocalCluster, namespace: str, example: str
) -> None:
    result = cluster.apply(REPO / "examples" / example, namespace=namespace)
    documents = list(yaml.safe_load_all((REPO / "examples" / example).read_text()))
    assert result.stdout.count("serverside-applied") == len(documents)
    assert "Warning" not in result.stderr


def test_defaults_are_filled_in_by_the_api_server(cluster: LocalCluster, namespace: str) -> None:
    cluster.apply(REPO / "examples" / "volcano-style.yaml", namespace=namespace)
    group = json.loads(
        cluster.kubectl("get", "pg", "volcano-job", "-n", namespace, "-o", "json").stdout
    )
    assert group["spec"]["queue"] == "default"
    assert group["spec"]["topology"] == {"networkTopology": "default", "preferred": "rack"}
    name = f"bare-{secrets.token_hex(3)}"
    cluster.apply([{"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "Queue",
                    "metadata": {"name": name}}])
    queue = json.loads(cluster.kubectl("get", "queue", name, "-o", "json").stdout)
    assert queue["spec"] == {"weight": 1, "reclaimable": True, "state": "Open"}
    cluster.kubectl("delete", "queue", name)


def test_kubectl_get_shows_the_printer_columns(cluster: LocalCluster, namespace: str) -> None:
    cluster.apply(REPO / "examples" / "queue.yaml")
    cluster.apply(REPO / "examples" / "gang-rack.yaml", namespace=namespace)
    cluster.kubectl(
        "patch", "pg", "train-rack", "-n", namespace, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": {"phase": "Running", "running": 8,
                                     "placement": {"summary": "rack rack-0-1, 8 nodes"}}}),
    )
    (row,) = table(cluster.kubectl("get", "pg", "-n", namespace).stdout)
    assert list(row) == ["NAME", "PHASE", "MINMEMBER", "RUNNING", "QUEUE", "PLACEMENT",
                         "EXPECTED-START", "AGE"]  # fmt: skip
    assert row | {"AGE": ""} == {
        "NAME": "train-rack", "PHASE": "Running", "MINMEMBER": "8", "RUNNING": "8",
        "QUEUE": "team-a", "PLACEMENT": "rack rack-0-1, 8 nodes", "EXPECTED-START": "",
        "AGE": "",
    }
    cluster.kubectl(  # waiting again, with a start expected (as Slurm's squeue --start)
        "patch", "pg", "train-rack", "-n", namespace, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": {"phase": "Pending", "running": 0, "placement": None,
                                     "expectedStart": {"at": "2026-12-05T14:20:00Z"}}}),
    )
    (row,) = table(cluster.kubectl("get", "pg", "-n", namespace).stdout)
    assert (row["PHASE"], row["EXPECTED-START"]) == ("Pending", "2026-12-05T14:20:00Z")
    name = f"columns-{secrets.token_hex(3)}"
    cluster.apply([{"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "Queue",
                    "metadata": {"name": name}, "spec": {"weight": 2, "parent": "team-a"}}])
    cluster.kubectl(
        "patch", "queue", name, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": {"pending": 1, "running": 2,
                                     "allocated": {"nvidia.com/gpu": 64}}}),
    )
    (row,) = table(cluster.kubectl("get", "queue", name).stdout)
    cluster.kubectl("delete", "queue", name)
    assert row | {"AGE": ""} == {
        "NAME": name, "STATE": "Open", "WEIGHT": "2", "PARENT": "team-a", "PENDING": "1",
        "RUNNING": "2", "ALLOCATED GPUS": "64", "AGE": "",
    }
    (row,) = table(cluster.kubectl("get", "ntopo", "default").stdout)
    assert list(row) == ["NAME", "LEVELS", "DOMAINS", "NODES", "DEGRADED", "AGE"]


def table(text: str) -> list[dict[str, str]]:
    """Rows of a `kubectl get` table, cut at the header's column starts."""
    header, *lines = text.splitlines()
    starts = [match.start() for match in re.finditer(r"(?<!\S)\S+(?: \S+)*", header)]
    names = [header[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
    return [
        {name: line[a:b].strip() for name, a, b in zip(names, starts, [*starts[1:], None],
                                                        strict=True)}
        for line in lines
    ]


def pod_group(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "bad"}, "spec": spec}


def queue(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "Queue",
            "metadata": {"name": f"bad-{secrets.token_hex(3)}"}, "spec": spec}


def topology(levels: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "scheduling.phalanx.io/v1alpha1", "kind": "NetworkTopology",
            "metadata": {"name": f"bad-{secrets.token_hex(3)}"}, "spec": {"levels": levels}}


HOST = {"name": "host", "nodeLabels": ["kubernetes.io/hostname"]}
RACK = {"name": "rack", "nodeLabels": ["network.topology.nvidia.com/leaf"]}
MALFORMED: dict[str, tuple[dict[str, Any], str]] = {
    "minMember zero": (pod_group({"minMember": 0}), "spec.minMember"),
    "minMember negative": (pod_group({"minMember": -4}), "spec.minMember"),
    "minMember string": (pod_group({"minMember": "eight"}), "spec.minMember"),
    "minMember missing": (pod_group({"queue": "default"}), "spec.minMember"),
    "misspelt field": (pod_group({"minMember": 2, "minMembers": 3}), "spec.minMembers"),
    "required and preferred": (
        pod_group({"minMember": 2, "topology": {"required": "rack", "preferred": "block"}}),
        "spec.topology.preferred",
    ),
    "a level and a node label at once": (
        pod_group({"minMember": 2, "topology": {"required": "rack",
                                                "preferredNodeLabel": "kubernetes.io/hostname"}}),
        "set at most one of topology.required",
    ),
    "invalid quantity": (
        pod_group({"minMember": 2, "minResources": {"nvidia.com/gpu": "eight"}}),
        "spec.minResources",
    ),
    "role minima above minMember": (
        pod_group({"minMember": 4, "roles": [{"name": "launcher", "minMember": 1},
                                             {"name": "worker", "minMember": 4}]}),
        "spec.roles",
    ),
    "duplicate role names": (
        pod_group({"minMember": 4, "roles": [{"name": "worker", "minMember": 1},
                                             {"name": "worker", "minMember": 2}]}),
        'spec.roles: duplicate entries for key [name="worker"]',
    ),
    "negative scheduleTimeoutSeconds": (
        pod_group({"minMember": 2, "scheduleTimeoutSeconds": -1}), "spec.scheduleTimeoutSeconds"
    ),
    "subGroup size zero": (
        pod_group({"minMember": 8, "topology": {"subGroup": {"size": 0, "required": "nvlink"}}}),
        "spec.topology.subGroup.size",
    ),
    "subGroup without level": (
        pod_group({"minMember": 8, "topology": {"subGroup": {"size": 4}}}),
        "spec.topology.subGroup.required",
    ),
    "level name not a DNS label": (
        pod_group({"minMember": 2, "topology": {"required": "Rack!"}}), "spec.topology.required"
    ),
    "queue weight zero": (queue({"weight": 0}), "spec.weight"),
    "queue state not an enum value": (queue({"state": "Paused"}), "spec.state"),
    "guarantee above capability": (
        queue({"guarantee": {"nvidia.com/gpu": "128"}, "capability": {"nvidia.com/gpu": 64}}),
        "spec.guarantee",
    ),
    "capability not a quantity": (queue({"capability": {"cpu": "2 cores"}}), "spec.capability"),
    "misspelt queue field": (queue({"wieght": 2}), "spec.wieght"),
    "empty levels": (topology([]), "spec.levels"),
    "duplicate level names": (
        topology([RACK, RACK, HOST]), 'spec.levels: duplicate entries for key [name="rack"]'
    ),
    "hostname not last": (topology([HOST, RACK]), "spec.levels"),
    "level without node labels": (
        topology([{"name": "rack", "nodeLabels": []}, HOST]), "spec.levels[0].nodeLabels"
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_objects_are_rejected_naming_the_field(
    cluster: LocalCluster, namespace: str, case: str
) -> None:
    manifest, field = MALFORMED[case]
    result = cluster.apply([manifest], namespace=namespace, check=False)
    assert result.returncode != 0, f"{case}: accepted"
    assert field in result.stderr, result.stderr
    kind, name = manifest["kind"], manifest["metadata"]["name"]
    absent = cluster.kubectl("get", kind.lower(), name, "-n", namespace, check=False)
    assert "NotFound" in absent.stderr
