"""Binder mode's DRA writes: a gang's ResourceClaims allocated and reserved before any of
its pods is bound, as kube-scheduler's DynamicResources plugin does in PreBind.

For each claim: the finalizer `resource.kubernetes.io/delete-protection` (so the claim
cannot vanish while allocated, and kube-controller-manager's resourceclaim controller
deallocates it once its last consumer is gone), then `status.allocation` (the devices,
the DeviceClass's config as FromClass and the claim's own as FromClaim, and a node
selector naming the node when the devices are node-local) and `status.reservedFor` the
gang's pods that use it. Both are full updates at the claim's resourceVersion, tried
again on a conflict, and a claim allocated meanwhile by someone else is not touched.
A claim shared by several pods of the gang is written once, reserved for all of them.

A pod whose claim comes from a template is written only once kube-controller-manager has
made the claim (its name in the pod's `status.resourceClaimStatuses`): until then no
pod of the gang is bound (`GangClaims.waiting`). A pod is bound only if every one of its
claims was written (the binder drops the others from the burst).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from phalanx.core.model.dra import ClaimAllocation, ClaimSpec, DeviceClass, DraInventory
from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.inputs import PodClaim
from phalanx.core.model.result import Binding
from phalanx.core.parse.pod import parse_pod
from phalanx.operator.assumed_claims import AssumedClaims
from phalanx.operator.cache import Body
from phalanx.operator.dra_kinds import claim_path
from phalanx.operator.kube.client import Api
from phalanx.operator.pods import is_gated

FINALIZER = "resource.kubernetes.io/delete-protection"
CONFLICT_ATTEMPTS = 5


@dataclasses.dataclass(frozen=True)
class Consumer:
    """A pod a claim is reserved for (status.reservedFor's entry)."""

    key: str  # "NS/NAME"
    uid: str

    def reference(self) -> dict[str, str]:
        return {"resource": "pods", "name": self.key.split("/", 1)[1], "uid": self.uid}


@dataclasses.dataclass(frozen=True)
class ClaimWrite:
    """One claim's write: the allocation to set (None: it is allocated already) and the
    gang's pods to reserve it for."""

    key: str  # "NS/NAME"
    allocation: Mapping[str, Any] | None
    consumers: tuple[Consumer, ...]
    devices: ClaimAllocation | None = None  # the allocation, as the core decided it


@dataclasses.dataclass(frozen=True)
class GangClaims:
    """A gang's claim writes, the claims each pod needs written before its binding, and
    why the gang is not bound this cycle ("" when it is)."""

    writes: Mapping[str, ClaimWrite] = dataclasses.field(default_factory=dict)
    pods: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    waiting: str = ""


def gang_claims(
    bindings: Sequence[Binding], inventory: DraInventory, pods: Mapping[str, Body]
) -> GangClaims:
    """What to write for one gang's claims, read from the pods as the watch shows them
    now (a claim made since the snapshot has its name there). Gated pods are skipped:
    in gate mode kube-scheduler allocates their claims."""
    allocations: dict[str, tuple[Mapping[str, Any], ClaimAllocation]] = {}
    consumers: dict[str, list[Consumer]] = {}
    needs: dict[str, tuple[str, ...]] = {}
    for binding in bindings:
        key = str(binding.pod)
        body = pods.get(key)
        if body is None or is_gated(body):
            continue
        entries = _entries(body)
        missing = [e for e in entries if e.claim is None]
        if missing:
            return GangClaims(waiting=(
                f"pod {key} waits for kube-controller-manager to make the ResourceClaim of "
                f"its entry {missing[0].name} (template {missing[0].template})"))
        uid = str(body.get("metadata", {}).get("uid", ""))
        for entry in entries:
            consumers.setdefault(str(entry.claim), []).append(Consumer(key, uid))
        needs[key] = tuple(str(e.claim) for e in entries)
        named = {e.name: e for e in entries}
        for allocation in binding.claims:
            own = named.get(allocation.entry)
            claim = allocation.claim or (own.claim if own is not None else None)
            spec = _spec(inventory, claim, own)
            if claim is None or spec is None:
                return GangClaims(waiting=f"pod {key}: claim of entry {allocation.entry} "
                                          "is not known yet")
            allocations[claim] = (allocation_status(allocation, spec, inventory.classes),
                                  allocation)
    writes = {}
    for key, found in consumers.items():
        status, decided = allocations.get(key, (None, None))
        writes[key] = ClaimWrite(key, status, tuple(found), decided)
    return GangClaims(writes, needs)


def _entries(body: Body) -> tuple[PodClaim, ...]:
    try:
        return parse_pod(body).claims
    except InvalidObject:
        return ()  # the cycle reports the invalid pod; it was not placed


def _spec(inventory: DraInventory, claim: str | None, entry: PodClaim | None) -> ClaimSpec | None:
    if claim is not None and claim in inventory.claims:
        return inventory.claims[claim].spec
    if entry is not None and entry.template is not None:
        return inventory.templates.get(entry.template)
    return None


def allocation_status(
    allocation: ClaimAllocation, spec: ClaimSpec, classes: Mapping[str, DeviceClass]
) -> dict[str, Any]:
    """`status.allocation` as upstream's allocator writes it: the results, then each
    DeviceClass's config once (FromClass, naming the requests of that class), then the
    claim's config that applies to the requests allocated (FromClaim)."""
    results = [{"request": r.request, "driver": r.device[0], "pool": r.device[1],
                "device": r.device[2]} for r in allocation.results]
    devices: dict[str, Any] = {"results": results}
    config = [*_class_config(allocation, spec, classes), *_claim_config(allocation, spec)]
    if config:
        devices["config"] = config
    status: dict[str, Any] = {"devices": devices}
    if allocation.node:
        status["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [allocation.node]}]}]}
    return status


def _chosen(allocation: ClaimAllocation, spec: ClaimSpec) -> list[tuple[str, str]]:
    """(result name, device class) of each request, in the claim's order: for
    `firstAvailable`, the choice the results name ("request/choice")."""
    used = {r.request for r in allocation.results}
    chosen = []
    for request in spec.requests:
        for ask in request.choices:
            name = request.result_name(ask)
            if name in used or not request.first_available:
                chosen.append((name, ask.device_class))
                break
    return chosen


def _class_config(allocation: ClaimAllocation, spec: ClaimSpec,
                  classes: Mapping[str, DeviceClass]) -> list[dict[str, Any]]:
    by_class: dict[str, list[dict[str, Any]]] = {}
    for name, class_name in _chosen(allocation, spec):
        if class_name in by_class:
            for entry in by_class[class_name]:
                entry["requests"].append(name)
            continue
        device_class = classes.get(class_name)
        by_class[class_name] = [
            {"source": "FromClass", "requests": [name], **_configuration(entry)}
            for entry in (device_class.config if device_class else ())]
    return [entry for entries in by_class.values() for entry in entries]


def _claim_config(allocation: ClaimAllocation, spec: ClaimSpec) -> list[dict[str, Any]]:
    names = {r.name for r in spec.requests} | {r.request for r in allocation.results}
    found = []
    for entry in spec.config:
        listed = entry.get("requests")
        requests = [str(r) for r in listed] if isinstance(listed, list) else []
        if requests and not names & set(requests):
            continue
        body: dict[str, Any] = {"source": "FromClaim", **_configuration(entry)}
        if requests:
            body["requests"] = requests
        found.append(body)
    return found


def _configuration(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The DeviceConfiguration part of a config entry (`opaque`), copied."""
    return {k: copy.deepcopy(v) for k, v in entry.items() if k not in ("requests", "source")}


async def write_claims(api: Api, claims: GangClaims, concurrency: int,
                       assumed: AssumedClaims, clock: Callable[[], float]) -> dict[str, str]:
    """Write every claim of the gang, each allocation held in `assumed` meanwhile (and
    until the watch shows it); returns pod key -> why it must not be bound (a claim it
    needs was not written)."""
    limit = asyncio.Semaphore(max(1, concurrency))
    for write in claims.writes.values():
        if write.devices is not None:
            assumed.allocated(write.key, write.devices.results, write.devices.node)

    async def one(write: ClaimWrite) -> tuple[str, str]:
        async with limit:
            outcome = await write_claim(api, write)
        if write.devices is not None:
            if outcome:
                assumed.forget(write.key)
            else:
                assumed.written(write.key, clock())
        return write.key, outcome

    outcomes = dict(await asyncio.gather(*(one(w) for w in claims.writes.values())))
    failed = {}
    for pod, needed in claims.pods.items():
        reasons = [f"claim {key}: {outcomes[key]}" for key in needed if outcomes.get(key)]
        if reasons:
            failed[pod] = reasons[0]
    return failed


async def write_claim(api: Api, write: ClaimWrite) -> str:
    """One claim's finalizer, allocation and reservations; "" once written, else why not."""
    namespace, name = write.key.split("/", 1)
    reason = "409 Conflict"
    for _ in range(CONFLICT_ATTEMPTS):
        reply = await api.request("GET", claim_path(namespace, name))
        if not reply.ok:
            return f"{reply.status} {reply.reason}"
        claim = copy.deepcopy(dict(reply.body))
        refusal = _refusal(claim, write)
        if refusal is not None:
            return refusal
        if write.allocation is not None and FINALIZER not in _finalizers(claim):
            claim["metadata"]["finalizers"] = [*_finalizers(claim), FINALIZER]
            reply = await api.request("PUT", claim_path(namespace, name), claim)
            if reply.status == 409:
                continue
            if not reply.ok:
                return f"{reply.status} {reply.reason}"
            claim = copy.deepcopy(dict(reply.body))
        status = dict(claim.get("status") or {})
        if write.allocation is not None:
            status["allocation"] = write.allocation
        status["reservedFor"] = _reserved(status.get("reservedFor") or [], write.consumers)
        claim["status"] = status
        reply = await api.request("PUT", claim_path(namespace, name, "status"), claim)
        if reply.ok:
            return ""
        if reply.status != 409:
            return f"{reply.status} {reply.reason}"
        reason = f"{reply.status} {reply.reason}"
    return reason


def _refusal(claim: Mapping[str, Any], write: ClaimWrite) -> str | None:
    if claim.get("metadata", {}).get("deletionTimestamp"):
        return "the claim is being deleted"
    current = (claim.get("status") or {}).get("allocation")
    if write.allocation is None and current is None:
        return "the claim is no longer allocated"
    if write.allocation is not None and current is not None and _devices(current) != _devices(
            write.allocation):
        return "the claim was allocated elsewhere in the meantime"
    return None


def _devices(allocation: Mapping[str, Any]) -> set[tuple[str, str, str]]:
    results = (allocation.get("devices") or {}).get("results") or []
    return {(str(r.get("driver")), str(r.get("pool")), str(r.get("device"))) for r in results}


def _finalizers(claim: Mapping[str, Any]) -> list[str]:
    return list(claim.get("metadata", {}).get("finalizers") or [])


def _reserved(current: Iterable[Mapping[str, Any]],
              consumers: Iterable[Consumer]) -> list[Mapping[str, Any]]:
    entries = list(current)
    known = {str(e.get("uid")) for e in entries}
    entries += (c.reference() for c in consumers if c.uid not in known)
    return entries
