"""Gangs whose GPUs come from DRA ResourceClaims: placed whole inside one domain, every
claim allocated to devices of its pod's node, no device given twice, and a clear reason
when they cannot be."""

from __future__ import annotations

from dataclasses import replace

from core_builders import gang, group, pod, racks, topology
from dra_builders import (
    A100,
    DRIVER,
    H100,
    IS_H100,
    gpu_spec,
    gpus,
    inventory,
    no_gpu_nodes,
)

from phalanx.core import StatusCode
from phalanx.core.cycle import run_cycle
from phalanx.core.model.dra import (
    AllocatedDevice,
    Claim,
    ClaimSpec,
    DeviceAsk,
    DeviceRequest,
    DraInventory,
    PodClaim,
)
from phalanx.core.model.result import CycleResult
from phalanx.core.snapshot.picture import Snapshot

RACKS = topology("default", "rack", "host")


def _cluster(racks_count: int = 2, hosts: int = 4, product: str = H100) -> tuple[list, list]:
    nodes = no_gpu_nodes(racks(racks_count, hosts, gpus=0))
    return nodes, [d for n in nodes for d in gpus(n.name, product=product)]


def _run(nodes: list, pods: list, groups: list, dra: DraInventory) -> CycleResult:
    return run_cycle(Snapshot(nodes=nodes, pods=pods, groups=groups, topologies=[RACKS], dra=dra))


def _allocated(result: CycleResult) -> dict[str, list[tuple[str, str, str]]]:
    return {
        str(b.pod): [r.device for c in b.claims for r in c.results] for b in result.bindings
    }


def test_gang_of_template_claims_lands_in_one_rack_with_devices_of_each_pods_node() -> None:
    nodes, devices = _cluster()
    train, pods = gang("train", 4, gpus=0, required="rack")
    result = _run(nodes, pods, [train], inventory(devices, pods, gpu_spec(8, IS_H100)))
    assert len(result.bindings) == 4
    rack = {n.name: n.labels["rack"] for n in nodes}
    assert len({rack[str(b.node)] for b in result.bindings}) == 1
    for binding in result.bindings:
        devices_held = [r.device for c in binding.claims for r in c.results]
        assert len(devices_held) == 8
        assert {pool for _, pool, _ in devices_held} == {str(binding.node)}
        assert binding.claims[0].node == str(binding.node)
        # Not made yet by kube-controller-manager: the writer finds it by the pod's entry.
        assert (binding.claims[0].claim, binding.claims[0].entry) == ("", "gpus")


def test_gang_wider_than_any_racks_free_devices_waits_whole_with_no_claim_allocated() -> None:
    nodes, devices = _cluster()
    train, pods = gang("train", 5, gpus=0, required="rack")
    result = _run(nodes, pods, [train], inventory(devices, pods, gpu_spec(8, IS_H100)))
    assert result.bindings == ()
    message = result.groups[0].message
    assert "within one rack" in message
    assert f"8 device(s) of class {DRIVER} where {IS_H100}" in message


def test_selector_no_device_meets_waits_and_names_the_selector() -> None:
    nodes, devices = _cluster(product=A100)
    train, pods = gang("train", 2, gpus=0)
    result = _run(nodes, pods, [train], inventory(devices, pods, gpu_spec(8, IS_H100)))
    assert result.bindings == ()
    assert result.groups[0].code is StatusCode.UNRESOLVABLE
    assert IS_H100 in result.groups[0].message


def test_selector_that_does_not_compile_is_named_with_the_claim() -> None:
    nodes, devices = _cluster()
    train, pods = gang("train", 2, gpus=0)
    bad = 'device.attributes["gpu.nvidia.com"].productName =='
    result = _run(nodes, pods, [train], inventory(devices, pods, gpu_spec(1, bad)))
    assert result.bindings == ()
    assert result.groups[0].code is StatusCode.ERROR
    assert "claim train-0-gpus: request gpus" in result.groups[0].message
    assert "does not compile" in result.groups[0].message


def test_selector_that_errors_on_a_device_is_named_never_raised() -> None:
    nodes, devices = _cluster()
    train, pods = gang("train", 1, gpus=0)
    bad = 'device.attributes["gpu.nvidia.com"].nosuch == "x"'
    result = _run(nodes, pods, [train], inventory(devices, pods, gpu_spec(1, bad)))
    assert result.bindings == ()
    assert "fails on device" in result.groups[0].message and bad in result.groups[0].message


def test_has_on_a_domain_the_device_lacks_is_false_not_an_error() -> None:
    nodes, devices = _cluster(1, 1)
    train, pods = gang("train", 1, gpus=0)
    lacks = 'has(device.attributes["other.example.com"].model)'
    result = _run(nodes, pods, [train], inventory(devices, pods, gpu_spec(1, f"!{lacks}")))
    assert len(result.bindings) == 1


def test_devices_held_by_a_running_pods_allocated_claim_are_not_given_again() -> None:
    nodes, devices = _cluster(1, 1)  # one node, 8 GPUs
    node_name = nodes[0].name
    runner = pod("runner", gpus=0, node_name=node_name)
    held = tuple(AllocatedDevice("gpus", (DRIVER, node_name, f"gpu-{i}")) for i in range(6))
    running = Claim("default", "runner-gpus", gpu_spec(6), held, node_name, ("runner",))
    train, pods = gang("train", 1, gpus=0)
    dra = inventory(
        devices, [runner, *pods], gpu_spec(4), claims=[running], uses={runner.key: "runner-gpus"}
    )
    assert _run(nodes, [runner, *pods], [train], dra).bindings == ()
    two = replace(dra, templates={"default/gpus": gpu_spec(2)})
    result = _run(nodes, [runner, *pods], [train], two)
    given = _allocated(result)["default/train-0"]
    assert sorted(d[2] for d in given) == ["gpu-6", "gpu-7"]


def test_claim_allocated_for_a_pod_not_bound_still_holds_its_devices() -> None:
    """A claim allocated (by a binder that then stopped, or kube-scheduler mid-way) keeps
    its devices until it is freed: they are not counted free."""
    nodes, devices = _cluster(1, 1)
    node_name = nodes[0].name
    held = tuple(AllocatedDevice("gpus", (DRIVER, node_name, f"gpu-{i}")) for i in range(8))
    orphan = Claim("default", "left-gpus", gpu_spec(8), held, node_name)
    train, pods = gang("train", 1, gpus=0)
    dra = inventory(devices, pods, gpu_spec(1), claims=[orphan])
    result = _run(nodes, pods, [train], dra)
    assert result.bindings == ()


def test_claim_shared_by_the_gangs_pods_is_allocated_once() -> None:
    nodes, devices = _cluster(1, 2)
    train, pods = gang("train", 2, gpus=0)
    shared = Claim("default", "shared", gpu_spec(1))
    dra = inventory(
        devices, pods, claims=[shared], uses={p.key: "shared" for p in pods}
    )
    result = _run(nodes, pods, [train], dra)
    assert len(result.bindings) == 2
    allocations = [c for b in result.bindings for c in b.claims]
    assert len(allocations) == 1 and allocations[0].claim == "default/shared"
    # Its device is local to one node, so both pods go there.
    assert len({str(b.node) for b in result.bindings}) == 1


def test_match_attribute_keeps_a_claims_devices_on_one_pcie_root() -> None:
    nodes, devices = _cluster(1, 1)
    node_name = nodes[0].name
    runner = pod("runner", gpus=0, node_name=node_name)
    # gpu-0 (root pci-0) and gpu-4 (pci-1) are held: 3 free on each root.
    held = (
        AllocatedDevice("gpus", (DRIVER, node_name, "gpu-0")),
        AllocatedDevice("gpus", (DRIVER, node_name, "gpu-4")),
    )
    running = Claim("default", "runner-gpus", gpu_spec(2), held, node_name, ("runner",))
    train, pods = gang("train", 1, gpus=0)
    for count, placed in ((3, True), (4, False)):
        dra = inventory(
            devices,
            [runner, *pods],
            gpu_spec(count, same="pcieRoot"),
            claims=[running],
            uses={runner.key: "runner-gpus"},
        )
        result = _run(nodes, [runner, *pods], [train], dra)
        assert bool(result.bindings) is placed
        if placed:
            roots = {name[2] for name in _allocated(result)["default/train-0"]}
            assert roots <= {"gpu-1", "gpu-2", "gpu-3"} or roots <= {"gpu-5", "gpu-6", "gpu-7"}
        else:
            assert "cannot be allocated" in result.groups[0].message


def test_first_available_takes_the_first_choice_that_fits() -> None:
    nodes, devices = _cluster(1, 1, product=A100)
    train, pods = gang("train", 1, gpus=0)
    choices = (
        DeviceAsk("h100", DRIVER, (IS_H100,), 2),
        DeviceAsk("any", DRIVER, (), 4),
    )
    spec = ClaimSpec((DeviceRequest("gpus", choices, first_available=True),))
    result = _run(nodes, pods, [train], inventory(devices, pods, spec))
    (claim,) = result.bindings[0].claims
    assert {r.request for r in claim.results} == {"gpus/any"} and len(claim.results) == 4


def test_all_mode_takes_every_matching_device_of_the_node() -> None:
    nodes, devices = _cluster(1, 1)
    train, pods = gang("train", 1, gpus=0)
    spec = ClaimSpec((DeviceRequest("gpus", (DeviceAsk("gpus", DRIVER, (), all_devices=True),)),))
    result = _run(nodes, pods, [train], inventory(devices, pods, spec))
    assert len(result.bindings[0].claims[0].results) == 8


def test_missing_claim_makes_the_pod_wait_with_its_name() -> None:
    nodes, devices = _cluster(1, 1)
    train, pods = gang("train", 1, gpus=0)
    dra = DraInventory(
        devices=tuple(devices),
        classes=inventory(devices, pods).classes,
        pod_claims={pods[0].key: (PodClaim("gpus", "default/nowhere"),)},
    )
    result = _run(nodes, pods, [train], dra)
    assert result.bindings == ()
    assert "default/nowhere" in result.groups[0].message


def test_second_gang_in_the_same_cycle_gets_other_devices() -> None:
    nodes, devices = _cluster(1, 2)
    first, first_pods = gang("first", 2, gpus=0)
    second, second_pods = gang("second", 2, gpus=0)
    pods = [*first_pods, *second_pods]
    result = _run(nodes, pods, [first, second], inventory(devices, pods, gpu_spec(4)))
    given = [d for devices_held in _allocated(result).values() for d in devices_held]
    assert len(given) == 16 and len(set(given)) == 16


def test_evicting_a_lower_priority_gang_frees_its_devices_for_a_higher_one() -> None:
    nodes, devices = _cluster(1, 1)
    node_name = nodes[0].name
    low = group("low", 1, priority=0)
    low_pod = pod("low-0", gpus=0, group="low", node_name=node_name)
    held = tuple(AllocatedDevice("gpus", (DRIVER, node_name, f"gpu-{i}")) for i in range(8))
    low_claim = Claim("default", "low-gpus", gpu_spec(8), held, node_name, ("low-0",))
    high, high_pods = gang("high", 1, gpus=0, priority=1000)
    pods = [low_pod, *high_pods]
    dra = inventory(
        devices, pods, gpu_spec(8), claims=[low_claim], uses={low_pod.key: "low-gpus"}
    )
    result = _run(nodes, pods, [low, high], dra)
    assert [str(e.pod) for e in result.evictions] == ["default/low-0"]
    assert result.bindings == ()
