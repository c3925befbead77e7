"""A Kubernetes PodGroup's `spec.resourceClaims` -> the claims its pods share.

Upstream (k8s.io/api scheduling/v1beta1 PodGroupResourceClaim, core/v1 PodResourceClaim,
gate DRAWorkloadResourceClaims): a pod of the group uses a group claim through an entry of
its own `spec.resourceClaims` whose name and source (resourceClaimName or
resourceClaimTemplateName) equal the group's entry. Such an entry resolves to one claim
for the whole group (made once from the template, named in the group's and the pods'
`status.resourceClaimStatuses`), never to a claim of the pod's own. Marking the pod's
entry with its group is all the core needs: a claim named by several pods is allocated
once and constrains them all (placement/claims.py), and a template claim not made yet is
counted once for the group (snapshot/claims.py `claim_of`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from phalanx.core.model.inputs import GroupInfo, PodClaim, PodInfo


def share_group_claims(pods: Sequence[PodInfo], groups: Iterable[GroupInfo]) -> list[PodInfo]:
    """`pods`, each entry that matches its group's claim marked as the group's."""
    shared = {str(g.key): g.claims for g in groups if g.claims}
    if not shared:
        return list(pods)
    return [_shared(pod, shared) for pod in pods]


def _shared(pod: PodInfo, shared: Mapping[str, tuple[PodClaim, ...]]) -> PodInfo:
    group = shared.get(f"{pod.namespace}/{pod.group}") if pod.group and pod.claims else None
    if not group:
        return pod
    by_name = {c.name: c for c in group}
    claims = tuple(_entry(entry, by_name.get(entry.name)) for entry in pod.claims)
    return replace(pod, claims=claims) if claims != pod.claims else pod


def _entry(entry: PodClaim, group: PodClaim | None) -> PodClaim:
    """The pod's entry as the group's when both name the same source."""
    if group is None or not _same_source(entry, group):
        return entry
    return replace(entry, claim=group.claim or entry.claim, group=group.group)


def _same_source(entry: PodClaim, group: PodClaim) -> bool:
    if group.template is not None:
        return entry.template == group.template
    return entry.template is None and entry.claim == group.claim
