"""The layers contract (pyproject.toml, checked by `lint-imports`) names every top-level
package, so a new package cannot sit outside the layers unchecked."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_top_level_package_is_in_a_layer() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    (layers,) = [c["layers"] for c in config["tool"]["importlinter"]["contracts"]
                 if c["type"] == "layers"]
    named = {name.strip() for layer in layers for name in layer.replace(":", "|").split("|")}
    package = REPO / "operator" / "phalanx"
    present = {f"phalanx.{p.name}" for p in package.iterdir() if (p / "__init__.py").exists()}
    present |= {f"phalanx.{p.stem}" for p in package.glob("*.py")
                if p.stem not in ("__init__", "__main__")}
    assert present == named
