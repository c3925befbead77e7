"""Fixtures of the deploy tests: the manifests rendered once per session."""

from __future__ import annotations

import pytest

from .rendering import MANIFESTS, Obj, render


@pytest.fixture(scope="session")
def rendered() -> list[Obj]:
    return render(MANIFESTS)
