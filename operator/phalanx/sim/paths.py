"""Relative data paths resolve against the repository root, as the shared data README says."""

from __future__ import annotations

from pathlib import Path

from phalanx.cluster.description import repository_root


def resolve(path: str | Path) -> Path:
    """`path` itself if it exists or is absolute, else the same path from the repository root."""
    candidate = Path(path)
    if candidate.is_absolute() or candidate.exists():
        return candidate
    return repository_root(Path(__file__).resolve().parent) / candidate
