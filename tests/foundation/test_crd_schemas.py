"""The CRDs in crds/ are the one source of the schemas (docs/design/crd-source.md): the
examples and the contract's defaults agree with them, and their structural rules refuse
what the API server refuses, without a cluster (the CEL rules are checked on a real API
server in test_crds_e2e.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from crd_schema import REPO, crd_schema, validate

KINDS = ("PodGroup", "Queue", "NetworkTopology")
GROUP_VERSION = "scheduling.phalanx.io/v1alpha1"


def obj(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": GROUP_VERSION, "kind": kind, "metadata": {"name": "x"}, "spec": spec}


@pytest.mark.parametrize(
    "path", sorted((REPO / "examples").glob("*.yaml")), ids=lambda path: path.name
)
def test_examples_agree_with_the_crds(path: Path) -> None:
    checked = 0
    for document in yaml.safe_load_all(path.read_text()):
        if document and document.get("kind") in KINDS:
            validate(document)
            checked += 1
    assert checked


def test_defaults_match_the_contract() -> None:
    group = crd_schema("PodGroup")["properties"]["spec"]["properties"]
    assert group["queue"]["default"] == "default"
    assert group["topology"]["properties"]["networkTopology"]["default"] == "default"
    queue = crd_schema("Queue")["properties"]["spec"]["properties"]
    assert (queue["weight"]["default"], queue["reclaimable"]["default"],
            queue["state"]["default"]) == (1, True, "Open")


@pytest.mark.parametrize(
    ("kind", "spec", "field"),
    [
        ("PodGroup", {"minMember": 0}, "minMember"),
        ("PodGroup", {"minMember": 2, "minMembr": 3}, "minMembr"),
        ("PodGroup", {"minMember": 2, "minResources": {"cpu": "lots"}}, "lots"),
        ("PodGroup", {"minMember": 2, "topology": {"required": "Rack!"}}, "Rack!"),
        ("Queue", {"state": "Paused"}, "Paused"),
        ("Queue", {"weight": 0}, "weight"),
        ("NetworkTopology", {"levels": []}, "levels"),
    ],
)
def test_the_schemas_refuse_what_the_api_server_refuses(
    kind: str, spec: dict[str, Any], field: str
) -> None:
    with pytest.raises(jsonschema.ValidationError, match=field):
        validate(obj(kind, spec))
