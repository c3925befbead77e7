"""Objects checked against the CRDs in crds/ (the one source of the schemas), without a
cluster: the structural part of what kube-apiserver checks with strict field validation
(types, bounds, patterns, enums, required fields, unknown fields). The CEL rules are the
API server's to check; tests/foundation/test_crds_e2e.py applies objects to a real one.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import jsonschema
import yaml

REPO = Path(__file__).resolve().parents[1]


def crd_schema(kind: str) -> dict[str, Any]:
    """The openAPIV3Schema of the CRD of `kind` (its one version)."""
    for path in sorted((REPO / "crds").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        if crd["spec"]["names"]["kind"] == kind:
            (version,) = crd["spec"]["versions"]
            schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
            return schema
    raise AssertionError(f"no CRD for {kind} in crds/")


def _strict(node: Any) -> Any:
    """Unknown fields are errors (kubectl's --validate=strict), as JSON Schema says it."""
    if isinstance(node, dict):
        node = {key: _strict(value) for key, value in node.items()}
        if "properties" in node and "additionalProperties" not in node and not node.get(
                "x-kubernetes-preserve-unknown-fields"):
            node["additionalProperties"] = False
    elif isinstance(node, list):
        node = [_strict(value) for value in node]
    return node


def validate(obj: dict[str, Any]) -> None:
    """Raise jsonschema.ValidationError if `obj` breaks its CRD's schema."""
    _validator(obj["kind"]).validate(obj)


@functools.cache
def _validator(kind: str) -> jsonschema.Draft202012Validator:
    """Built once per kind: reading the CRDs was most of a check's time (the fuzz tests
    of tests/workloads/test_translate_fuzz.py check thousands of objects)."""
    schema = _strict(copy.deepcopy(crd_schema(kind)))
    schema["properties"]["metadata"] = {"type": "object"}
    return jsonschema.Draft202012Validator(schema)
