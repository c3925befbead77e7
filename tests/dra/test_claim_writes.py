"""The operator's DRA pieces that decide on plain objects: the allocation written (upstream's
shape), which gang waits for kube-controller-manager, which claims are orphaned, the
claims held until the watch shows them, and the kwok stand-in's slices."""

from __future__ import annotations

from typing import Any

from phalanx.cluster.description import description_from_dict
from phalanx.cluster.dra_slices import DRIVER, slice_objects
from phalanx.core.model.dra import (
    AllocatedDevice,
    Claim,
    ClaimAllocation,
    ClaimSpec,
    DeviceAsk,
    DeviceClass,
    DeviceRequest,
    DraInventory,
)
from phalanx.core.model.names import GroupKey, NodeName, PodKey
from phalanx.core.model.result import Binding
from phalanx.core.parse.dra import complete_devices, parse_device_class, parse_slice
from phalanx.operator.assumed_claims import AssumedClaims
from phalanx.operator.claim_recovery import claims_ready, orphaned
from phalanx.operator.claim_writes import allocation_status, gang_claims

OPAQUE = {"opaque": {"driver": DRIVER, "parameters": {"sharing": "none"}}}
SPEC = ClaimSpec(
    requests=(
        DeviceRequest("gpus", (DeviceAsk("gpus", DRIVER, count=2),)),
        DeviceRequest("nic", (DeviceAsk("big", "nic"), DeviceAsk("small", "nic")),
                      first_available=True),
    ),
    config=({"requests": ["gpus"], **OPAQUE}, {"requests": ["other"], **OPAQUE}),
)
ALLOCATION = ClaimAllocation(
    "ns/c", (AllocatedDevice("gpus", (DRIVER, "n1", "gpu-0")),
             AllocatedDevice("gpus", (DRIVER, "n1", "gpu-1")),
             AllocatedDevice("nic/small", ("nic.example.com", "n1", "eth1"))), "n1", "gpus")


def test_the_allocation_has_the_results_the_class_config_then_the_claims_and_the_node() -> None:
    classes = {DRIVER: DeviceClass(DRIVER, (), (OPAQUE,)), "nic": DeviceClass("nic")}
    status = allocation_status(ALLOCATION, SPEC, classes)
    assert status["devices"]["results"][2] == {
        "request": "nic/small", "driver": "nic.example.com", "pool": "n1", "device": "eth1"}
    assert status["devices"]["config"] == [
        {"source": "FromClass", "requests": ["gpus"], **OPAQUE},
        {"source": "FromClaim", "requests": ["gpus"], **OPAQUE},  # "other" names no request
    ]
    assert status["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}


def pod(name: str, uid: str = "u1", made: str | None = None, **spec: Any) -> dict[str, Any]:
    statuses = [{"name": "gpus", "resourceClaimName": made}] if made else []
    status = {"resourceClaimStatuses": statuses} if statuses else {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": uid},
            "spec": {"schedulerName": "phalanx", "containers": [{"name": "c"}],
                     "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "t"}],
                     **spec},
            "status": status}


def binding(name: str, claims: tuple[ClaimAllocation, ...] = ()) -> Binding:
    return Binding(PodKey(f"ns/{name}"), NodeName("n1"), GroupKey("ns/g"), claims=claims)


def test_a_gang_waits_until_every_template_claim_is_made_then_writes_each_once() -> None:
    inventory = DraInventory(templates={"ns/t": SPEC})
    made = ClaimAllocation("", ALLOCATION.results, "n1", "gpus")
    bindings = [binding("a", (made,)), binding("b", (made,))]
    waiting = gang_claims(bindings, inventory, {"ns/a": pod("a", made="a-gpus"),
                                                "ns/b": pod("b", "u2")})
    assert "ns/b waits for kube-controller-manager" in waiting.waiting
    assert not waiting.writes
    ready = gang_claims(bindings, inventory, {"ns/a": pod("a", made="a-gpus"),
                                              "ns/b": pod("b", "u2", made="b-gpus")})
    assert ready.waiting == ""
    assert sorted(ready.writes) == ["ns/a-gpus", "ns/b-gpus"]
    assert ready.writes["ns/a-gpus"].allocation is not None
    assert [c.uid for c in ready.writes["ns/b-gpus"].consumers] == ["u2"]
    assert ready.pods == {"ns/a": ("ns/a-gpus",), "ns/b": ("ns/b-gpus",)}


def claim(reserved: list[tuple[str, str]], allocated: bool = True) -> dict[str, Any]:
    status: dict[str, Any] = {"reservedFor": [{"resource": "pods", "name": n, "uid": u}
                                              for n, u in reserved]}
    if allocated:
        status["allocation"] = {"devices": {"results": [
            {"request": "gpus", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}}
    return {"metadata": {"name": "a-gpus", "namespace": "ns"}, "status": status}


def test_a_claim_is_orphaned_only_when_every_consumer_is_an_unbound_phalanx_pod_not_in_flight(
) -> None:
    pods = {"ns/a": pod("a", made="a-gpus"), "ns/b": pod("b", "u2", made="b-gpus")}
    assert orphaned(claim([("a", "u1")]), pods, busy=set())
    assert not orphaned(claim([("a", "u1")]), pods, busy={"ns/a"})  # being bound now
    assert not orphaned(claim([("a", "u1")], allocated=False), pods, busy=set())
    assert not orphaned(claim([("a", "other-uid")]), pods, busy=set())  # another pod
    assert not orphaned(claim([("gone", "u9")]), pods, busy=set())  # the controller's
    # Allocated, reserved for no one: kept, as upstream keeps it (claim_recovery.py).
    assert not orphaned(claim([]), pods, busy=set())
    bound = {"ns/a": pod("a", nodeName="n1")}
    assert not orphaned(claim([("a", "u1")]), bound, busy=set())
    theirs = {"ns/a": pod("a", schedulerName="default-scheduler")}
    assert not orphaned(claim([("a", "u1")]), theirs, busy=set())


def test_a_leftover_plan_binds_a_pod_only_once_its_claims_are_allocated_for_it() -> None:
    body = pod("a", made="a-gpus")
    assert claims_ready(body, {"ns/a-gpus": claim([("a", "u1")])})
    assert not claims_ready(body, {"ns/a-gpus": claim([])})
    assert not claims_ready(body, {})
    assert not claims_ready(pod("a"), {"ns/a-gpus": claim([("a", "u1")])})  # not made yet


def test_claims_written_are_shown_allocated_until_the_watch_shows_them() -> None:
    held = AssumedClaims(ttl_seconds=30)
    plain = Claim("ns", "c", SPEC)
    held.allocated("ns/c", ALLOCATION.results, "n1")
    shown = held.shown(plain)
    assert isinstance(shown, Claim) and shown.allocation == ALLOCATION.results
    held.expire([plain], now=10**9)  # not written yet: kept whatever the time
    assert len(held) == 1
    held.written("ns/c", now=0)
    held.expire([plain], now=1)
    assert len(held) == 1
    held.expire([Claim("ns", "c", SPEC, allocation=ALLOCATION.results)], now=2)
    assert len(held) == 0
    held.freed("ns/c", now=0)
    freed = held.shown(Claim("ns", "c", SPEC, allocation=ALLOCATION.results))
    assert isinstance(freed, Claim) and freed.allocation is None
    held.expire([plain], now=31)
    assert len(held) == 0


def test_the_kwok_stand_in_publishes_the_nvidia_drivers_shape_only_for_dra_nodes() -> None:
    layout = {"blocks": 1, "racksPerBlock": 1, "nodesPerRack": 2}
    assert slice_objects(description_from_dict({"name": "x", "layout": layout})) == []
    objects = slice_objects(description_from_dict(
        {"name": "x", "layout": layout, "node": {"dra": True, "gpus": 4}}))
    device_class, *slices = objects
    assert parse_device_class(device_class).selectors == ('device.driver == "gpu.nvidia.com"',)
    devices = complete_devices([parse_slice(s) for s in slices])
    assert len(devices) == 8
    first = devices[0]
    assert first.name == "gpu-0" and first.node == first.pool
    assert first.attributes[f"{DRIVER}/productName"] == "NVIDIA H100 80GB HBM3"
    assert first.attributes[f"{DRIVER}/type"] == "gpu"
    assert first.attributes[f"{DRIVER}/architecture"] == "Hopper"
    assert {d.attributes[f"{DRIVER}/uuid"] for d in devices}.__len__() == 8
    assert first.capacity[f"{DRIVER}/memory"] > 0
