"""Kubernetes' own PodGroup (scheduling.k8s.io/v1beta1) with `spec.resourceClaims`: claims
shared by the whole group. A pod uses one through an entry of its own with the same name
and source; that entry is the group's one claim (allocated once, constraining every pod),
never a claim of the pod's own; an entry that differs stays the pod's."""

from __future__ import annotations

from typing import Any

import pytest
from core_builders import racks, topology
from dra_builders import GPU_CLASS, gpu_spec, gpus, no_gpu_nodes

from phalanx.core import InvalidObject
from phalanx.core.cycle import run_cycle
from phalanx.core.model.dra import Claim, DraInventory
from phalanx.core.model.inputs import GroupInfo, PodInfo
from phalanx.core.parse import parse_pod_group
from phalanx.core.parse.group_claims import share_group_claims
from phalanx.core.parse.pod import parse_pod
from phalanx.core.snapshot.picture import Snapshot

RACKS = topology("default", "rack", "host")


def upstream_group(claims: list[dict[str, Any]], made: dict[str, str] | None = None
                   ) -> dict[str, Any]:
    status = {"resourceClaimStatuses": [{"name": k, "resourceClaimName": v}
                                        for k, v in (made or {}).items()]}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "train", "namespace": "ml"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "resourceClaims": claims},
            "status": status}


def member(name: str, claims: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "uid": name},
            "spec": {"schedulerName": "phalanx", "schedulingGroup": {"podGroupName": "train"},
                     "resourceClaims": claims,
                     "containers": [{"name": "c", "resources": {
                         "requests": {"cpu": "1"}, "claims": [{"name": c["name"]}
                                                              for c in claims]}}]}}


def parsed(group: dict[str, Any], pods: list[dict[str, Any]]
           ) -> tuple[GroupInfo, list[PodInfo]]:
    info = parse_pod_group(group)
    members = [parse_pod(p) for p in pods]
    assert all(p.group == "train" for p in members)
    return info, share_group_claims(members, [info])


FROM_TEMPLATE = {"name": "gpus", "resourceClaimTemplateName": "h100x2"}


def test_a_pods_entry_equal_to_the_groups_is_the_groups_one_claim() -> None:
    group, pods = parsed(upstream_group([FROM_TEMPLATE], {"gpus": "train-gpus-x7k2"}),
                         [member(f"train-{i}", [FROM_TEMPLATE]) for i in range(2)])
    assert group.claims[0].claim == "ml/train-gpus-x7k2"
    for pod in pods:
        (entry,) = pod.claims
        assert (entry.claim, entry.group) == ("ml/train-gpus-x7k2", "ml/train")


def test_an_entry_with_another_source_stays_the_pods_own() -> None:
    own = {"name": "gpus", "resourceClaimTemplateName": "other"}
    _, pods = parsed(upstream_group([FROM_TEMPLATE]), [member("train-0", [own])])
    assert pods[0].claims[0].group is None


@pytest.mark.parametrize(("claims", "words"), [
    ([{"name": "gpus"}], "set exactly one of resourceClaimName and resourceClaimTemplateName"),
    ([{"name": "gpus", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}],
     "set exactly one of"),
    ([{"resourceClaimName": "a"}], r"spec.resourceClaims\[0\].name: missing"),
    ([FROM_TEMPLATE, FROM_TEMPLATE], "'gpus' is named twice"),
])
def test_a_malformed_group_claim_is_named(claims: list[dict[str, Any]], words: str) -> None:
    with pytest.raises(InvalidObject, match=words):
        parse_pod_group(upstream_group(claims))


def _cycle(pods: list[PodInfo], group: GroupInfo, claims: list[Claim]) -> Any:
    nodes = no_gpu_nodes(racks(1, 2, gpus=0))
    dra = DraInventory(
        devices=tuple(d for n in nodes for d in gpus(n.name)),
        classes={GPU_CLASS.name: GPU_CLASS},
        claims={c.key: c for c in claims},
        templates={"ml/h100x2": gpu_spec(2)},
        pod_claims={str(p.key): p.claims for p in pods},
    )
    return run_cycle(Snapshot(nodes=nodes, pods=pods, groups=[group], topologies=[RACKS],
                              dra=dra))


def test_the_groups_claim_is_allocated_once_and_holds_every_pod_on_its_devices_node() -> None:
    group, pods = parsed(upstream_group([FROM_TEMPLATE], {"gpus": "train-gpus-x7k2"}),
                         [member(f"train-{i}", [FROM_TEMPLATE]) for i in range(2)])
    result = _cycle(pods, group, [Claim("ml", "train-gpus-x7k2", gpu_spec(2))])
    assert len(result.bindings) == 2
    allocations = [c for b in result.bindings for c in b.claims]
    assert len(allocations) == 1 and allocations[0].claim == "ml/train-gpus-x7k2"
    assert len(allocations[0].results) == 2
    assert len({str(b.node) for b in result.bindings}) == 1  # node-local devices


def test_the_groups_claim_not_made_yet_counts_once_not_once_per_pod() -> None:
    """Before kube-controller-manager makes the group's claim, the pods' entries are one
    claim-to-be: 2 GPUs for the group, not 2 per pod (per pod, two nodes would be used)."""
    group, pods = parsed(upstream_group([FROM_TEMPLATE]),
                         [member(f"train-{i}", [FROM_TEMPLATE]) for i in range(2)])
    result = _cycle(pods, group, [])
    allocations = [c for b in result.bindings for c in b.claims]
    assert len(result.bindings) == 2
    assert len(allocations) == 1 and len(allocations[0].results) == 2
    assert len({str(b.node) for b in result.bindings}) == 1
