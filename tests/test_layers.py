"""The layers contracts (pyproject.toml, checked by `lint-imports`) name every top-level
package, and every stage of the core, so a new package cannot sit outside the layers
unchecked."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "operator" / "phalanx"


def _layers(container: str | None) -> set[str]:
    """The names in the one layers contract over `container` (None: the top level)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"
                 and (c.get("containers") or [None]) == [container]]
    return {name.strip() for layer in layers for name in layer.replace(":", "|").split("|")}


def _children(folder: Path) -> set[str]:
    """Sub-packages and modules of a folder, by name."""
    packages = {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "__main__")}
    return packages | modules


def test_every_top_level_package_is_in_a_layer() -> None:
    assert {f"phalanx.{name}" for name in _children(PACKAGE)} == _layers(None)


def test_every_stage_of_the_core_is_in_a_layer() -> None:
    assert _children(PACKAGE / "core") == _layers("phalanx.core")
