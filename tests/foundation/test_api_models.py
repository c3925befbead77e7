"""The pydantic models and the CRDs describe the same objects (no cluster needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from phalanx.api import (
    NetworkTopology,
    NetworkTopologySpec,
    NetworkTopologyStatus,
    PodGroup,
    PodGroupSpec,
    PodGroupStatus,
    Queue,
    QueueSpec,
    QueueStatus,
    parse_quantity,
)

REPO = Path(__file__).resolve().parents[2]
HOSTNAME = "kubernetes.io/hostname"
CRDS = {
    "PodGroup": (PodGroupSpec, PodGroupStatus),
    "Queue": (QueueSpec, QueueStatus),
    "NetworkTopology": (NetworkTopologySpec, NetworkTopologyStatus),
}
COMPARED = (
    "type", "enum", "default", "minimum", "maximum", "minLength", "maxLength", "pattern",
    "minItems", "maxItems", "maxProperties",
)


def crd_schema(kind: str) -> dict[str, Any]:
    for path in sorted((REPO / "crds").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        if crd["spec"]["names"]["kind"] == kind:
            (version,) = crd["spec"]["versions"]
            schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
            return schema
    raise AssertionError(f"no CRD for {kind} in crds/")


def model_schema(model: type[BaseModel]) -> tuple[dict[str, Any], dict[str, Any]]:
    schema = model.model_json_schema(by_alias=True)
    return schema, schema.get("$defs", {})


def resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Follow $ref and drop the `null` branch pydantic adds for optional fields."""
    extra = {key: value for key, value in node.items() if key not in ("$ref", "anyOf")}
    if "$ref" in node:
        return {**resolve(defs[node["$ref"].split("/")[-1]], defs), **extra}
    branches = [branch for branch in node.get("anyOf", []) if branch != {"type": "null"}]
    if len(branches) == 1:
        return {**resolve(branches[0], defs), **extra}
    return node


def compare(
    crd: dict[str, Any], model: dict[str, Any], defs: dict[str, Any], path: str
) -> list[str]:
    model = resolve(model, defs)
    if crd.get("x-kubernetes-int-or-string"):
        types = sorted(branch.get("type") for branch in model.get("anyOf", []))
        problems = [] if types == ["integer", "string"] else [f"{path}: not int-or-string"]
        string = next(b for b in model.get("anyOf", []) if b.get("type") == "string")
        for key in ("pattern", "maxLength"):
            if crd.get(key) != string.get(key):
                problems.append(f"{path}: {key} {crd.get(key)!r} != {string.get(key)!r}")
        return problems
    problems = [
        f"{path}: {key} {crd.get(key)!r} != {model.get(key)!r}"
        for key in COMPARED
        if crd.get(key) != model.get(key) and not (key == "default" and crd.get(key) is None)
    ]
    if crd.get("type") == "object" and "properties" in crd:
        crd_props, model_props = crd["properties"], model.get("properties", {})
        if set(crd_props) != set(model_props):
            problems.append(f"{path}: properties {sorted(crd_props)} != {sorted(model_props)}")
        if set(crd.get("required", [])) != set(model.get("required", [])):
            problems.append(f"{path}: required {crd.get('required')} != {model.get('required')}")
        for name in set(crd_props) & set(model_props):
            problems += compare(crd_props[name], model_props[name], defs, f"{path}.{name}")
    if "additionalProperties" in crd:
        problems += compare(
            crd["additionalProperties"], model.get("additionalProperties", {}), defs, f"{path}.*"
        )
    if "items" in crd:
        problems += compare(crd["items"], model.get("items", {}), defs, f"{path}[]")
    return problems


@pytest.mark.parametrize("kind", sorted(CRDS))
@pytest.mark.parametrize("part", ["spec", "status"])
def test_model_matches_crd_schema(kind: str, part: str) -> None:
    crd = crd_schema(kind)["properties"][part]
    model = CRDS[kind][0 if part == "spec" else 1]
    schema, defs = model_schema(model)
    assert compare({**crd, "default": None}, {**schema, "default": None}, defs, part) == []


def test_comparison_notices_a_difference() -> None:
    """The agreement check itself fails when a field differs, so passing means something."""
    crd = crd_schema("PodGroup")["properties"]["spec"]
    altered = {**crd, "properties": {**crd["properties"], "minMembers": {"type": "integer"}}}
    schema, defs = model_schema(PodGroupSpec)
    assert compare(altered, schema, defs, "spec")


@pytest.mark.parametrize(
    "path", sorted((REPO / "examples").glob("*.yaml")), ids=lambda path: path.name
)
def test_examples_parse_with_the_models(path: Path) -> None:
    models: dict[str, type[BaseModel]] = {
        "PodGroup": PodGroup, "Queue": Queue, "NetworkTopology": NetworkTopology,
    }
    kinds = []
    for document in yaml.safe_load_all(path.read_text()):
        if document["kind"] in models:
            parsed = models[document["kind"]].model_validate(document)
            kinds.append(document["kind"])
            spec = parsed.model_dump(by_alias=True, exclude_unset=True)["spec"]
            assert {key: spec[key] for key in document["spec"]} == document["spec"]
    assert kinds


def test_defaults_match_the_contract() -> None:
    group = PodGroupSpec.model_validate({"minMember": 2, "topology": {"required": "rack"}})
    assert group.queue == "default"
    assert group.topology is not None and group.topology.network_topology == "default"
    queue = QueueSpec()
    assert (queue.weight, queue.reclaimable, queue.state) == (1, True, "Open")


@pytest.mark.parametrize(
    ("model", "data", "needle"),
    [
        (PodGroupSpec, {"minMember": 0}, "minMember"),
        (PodGroupSpec, {"minMember": 2, "minMembr": 3}, "minMembr"),
        (PodGroupSpec, {"minMember": 2, "topology": {"required": "rack", "preferred": "block"}},
         "not both"),
        (PodGroupSpec, {"minMember": 2, "roles": [{"name": "a", "minMember": 2},
                                                   {"name": "b", "minMember": 1}]}, "minMember"),
        (PodGroupSpec, {"minMember": 2, "roles": [{"name": "a", "minMember": 1},
                                                   {"name": "a", "minMember": 1}]}, "unique"),
        (PodGroupSpec, {"minMember": 2, "minResources": {"cpu": "lots"}}, "minResources"),
        (QueueSpec, {"guarantee": {"nvidia.com/gpu": "16"}, "capability": {"nvidia.com/gpu": 8}},
         "guarantee"),
        (QueueSpec, {"state": "Paused"}, "state"),
        (NetworkTopologySpec, {"levels": [{"name": "host", "nodeLabels": [HOSTNAME]},
                                          {"name": "rack", "nodeLabels": ["r"]}]}, "last level"),
        (NetworkTopologySpec, {"levels": [{"name": "a", "nodeLabels": ["x"]},
                                          {"name": "a", "nodeLabels": ["y"]}]}, "unique"),
    ],
)
def test_models_reject_what_the_api_server_rejects(
    model: type[BaseModel], data: dict[str, Any], needle: str
) -> None:
    with pytest.raises(ValidationError, match=needle):
        model.model_validate(data)


@pytest.mark.parametrize(
    ("text", "value"),
    [("8", 8), ("500m", 0.5), ("2Ti", 2 * 2**40), ("1.5k", 1500), ("1e3", 1000), (16, 16)],
)
def test_quantities_parse_exactly(text: str | int, value: float) -> None:
    assert parse_quantity(text) == value
