"""Relative data paths resolve against the repository root, where the data lives (bench/data/)."""

from __future__ import annotations

from pathlib import Path

from phalanx.cluster.description import repository_root


def resolve(path: str | Path) -> Path:
    """`path` itself if it exists or is absolute, else the same path from the repository root."""
    candidate = Path(path)
    if candidate.is_absolute() or candidate.exists():
        return candidate
    return repository_root(Path(__file__).resolve().parent) / candidate
