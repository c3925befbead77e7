"""What to write so a workload's PodGroups are the ones it should have.

Pure: the PodGroups `pod_groups_for` wants and the ones the workload owns now in, the
writes out. An unchanged workload causes no write; a LeaderWorkerSet scaled down loses
the PodGroups of the groups it no longer has (the garbage collector only removes them
with the workload itself).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PodGroupChanges:
    """`apply`: PodGroups to create or update (whole objects, for server-side apply);
    `delete`: names of owned PodGroups the workload no longer wants."""

    apply: tuple[dict[str, Any], ...] = ()
    delete: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.apply or self.delete)


def owned_by(group: Mapping[str, Any], uid: str) -> bool:
    refs = (group.get("metadata") or {}).get("ownerReferences") or []
    return any(isinstance(ref, Mapping) and ref.get("uid") == uid for ref in refs)


def changes_for(
    desired: Iterable[dict[str, Any]], owned: Iterable[Mapping[str, Any]]
) -> PodGroupChanges:
    current = {str((g.get("metadata") or {}).get("name")): g for g in owned}
    wanted = {str(g["metadata"]["name"]): g for g in desired}
    apply = tuple(
        wanted[name]
        for name in sorted(wanted)
        if name not in current or _differs(wanted[name], current[name])
    )
    delete = tuple(sorted(name for name in current if name not in wanted))
    return PodGroupChanges(apply, delete)


def _differs(wanted: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """Only what we set counts: the API server adds defaults (networkTopology) and
    other fields that must not cause a write every time."""
    return not _contains(current.get("spec") or {}, wanted["spec"]) or not _contains(
        (current.get("metadata") or {}).get("labels") or {}, wanted["metadata"]["labels"]
    )


def _contains(current: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        return isinstance(current, Mapping) and all(
            _contains(current.get(key), value) for key, value in wanted.items()
        )
    return bool(current == wanted)
