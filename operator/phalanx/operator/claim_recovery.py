"""Crash consistency of DRA claims, as `plans.py` is for bindings: no claim stays allocated
to a gang that was not bound.

Binder mode allocates a gang's claims before its bindings (claim_writes.py). If this
process dies in between, or the bindings fail, a claim is left allocated and reserved for
pods that are not on any node. Each cycle, a claim allocated and reserved only for pods
that name Phalanx as their scheduler, none of them bound and none being bound by this
process right now (assumed), is freed: `status.allocation` and `status.reservedFor`
cleared (at the claim's resourceVersion: a claim that changed meanwhile is left for the
next cycle) and the delete-protection finalizer removed, as kube-controller-manager's
resourceclaim controller does when a claim's last consumer is gone. A claim reserved for
any other consumer, for a pod that is gone or being deleted (the controller's work), or
for a bound pod is never touched.

A claim allocated and reserved for no one is not freed either, as upstream does not free
it: kube-controller-manager's resourceclaim controller (pkg/controller/resourceclaim,
`syncClaim`) deallocates only on the transition from reserved to not reserved ("a claim
that is currently unused should not get deallocated": a DRA driver may allocate without
reserving), and it makes that transition itself when a consumer goes (it removes the pod
from `reservedFor` and, the finalizer being there, clears the allocation). Phalanx never
leaves one behind: it writes `allocation` and `reservedFor` in one status update.

A leftover plan finished after a restart binds a pod only if its claims are allocated
and reserved for it (`claims_ready`); the others are left to the next cycles.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

import structlog

from phalanx.operator.assumed_claims import AssumedClaims
from phalanx.operator.cache import Body, object_key
from phalanx.operator.claim_writes import FINALIZER
from phalanx.operator.dra_kinds import claim_path
from phalanx.operator.kube.client import Api
from phalanx.operator.pods import is_bound, is_deleting, wants_phalanx

log = structlog.get_logger("phalanx.operator")


def orphaned(claim: Body, pods: Mapping[str, Body], busy: Collection[str]) -> bool:
    """Allocated and reserved only for unbound pods of Phalanx not being bound now."""
    status = claim.get("status") or {}
    consumers = status.get("reservedFor") or []
    if not status.get("allocation") or not consumers:
        return False
    namespace = claim.get("metadata", {}).get("namespace")
    for ref in consumers:
        if ref.get("resource") != "pods" or ref.get("apiGroup"):
            return False
        key = f"{namespace}/{ref.get('name')}"
        pod = pods.get(key)
        if pod is None or key in busy or is_bound(pod) or is_deleting(pod):
            return False
        if not wants_phalanx(pod) or pod.get("metadata", {}).get("uid") != ref.get("uid"):
            return False
    return True


def claims_ready(pod: Body, claims: Mapping[str, Body]) -> bool:
    """Every claim the pod names is allocated and reserved for it (a pod with no claims
    is ready): what a leftover plan needs before it binds the pod."""
    spec = pod.get("spec", {}).get("resourceClaims") or []
    made = {s.get("name"): s.get("resourceClaimName")
            for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    namespace = pod.get("metadata", {}).get("namespace")
    uid = pod.get("metadata", {}).get("uid")
    for entry in spec:
        name = entry.get("resourceClaimName") or made.get(entry.get("name"))
        claim = claims.get(f"{namespace}/{name}") if name else None
        status = (claim or {}).get("status") or {}
        reserved = {ref.get("uid") for ref in status.get("reservedFor") or []}
        if not status.get("allocation") or uid not in reserved:
            return False
    return True


class ClaimRecovery:
    """Frees the orphaned claims, once per cycle, before the cycle decides."""

    def __init__(self, api: Api, assumed: AssumedClaims, clock: Callable[[], float]) -> None:
        self._api = api
        self._assumed = assumed
        self._clock = clock
        self.freed = 0

    async def recover(self, claims: Iterable[Body], pods: Mapping[str, Body],
                      busy: Collection[str]) -> list[str]:
        """Free every orphaned claim; returns the keys of those freed."""
        freed = []
        for claim in claims:
            if orphaned(claim, pods, busy) and await self._free(claim):
                key = object_key(claim)
                self._assumed.freed(key, self._clock())
                freed.append(key)
        if freed:
            self.freed += len(freed)
            log.info("claims freed: allocated to pods not bound", claims=freed)
        return freed

    async def _free(self, claim: Body) -> bool:
        meta = claim.get("metadata", {})
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        body: dict[str, Any] = copy.deepcopy(dict(claim))
        body["status"] = {**(body.get("status") or {}), "allocation": None, "reservedFor": None}
        reply = await self._api.request("PUT", claim_path(namespace, name, "status"), body)
        if not reply.ok:  # changed meanwhile (409) or gone: the next cycle looks again
            log.info("claim not freed", claim=f"{namespace}/{name}", status=reply.status,
                     reason=reply.reason)
            return False
        updated = copy.deepcopy(dict(reply.body))
        finalizers = list(updated.get("metadata", {}).get("finalizers") or [])
        if FINALIZER in finalizers:
            updated["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER]
            reply = await self._api.request("PUT", claim_path(namespace, name), updated)
            if not reply.ok:
                log.info("claim finalizer not removed", claim=f"{namespace}/{name}",
                         status=reply.status, reason=reply.reason)
        return True
