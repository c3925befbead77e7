"""The DRA side-by-side benchmark gives both contenders the same gangs: the same pods with
the same claims, Phalanx's in a PodGroup that must stay in one rack."""

from __future__ import annotations

import copy

from bench.common import ROOT
from bench.dra.e2e import WORKLOAD, claim_templates, gang_objects, template_name
from bench.e2e.workload import draw_gangs, load_workload

from phalanx.cluster import load_description


def test_both_contenders_get_the_same_pods_and_claims() -> None:
    workload = load_workload(WORKLOAD)
    description = load_description(ROOT / workload.cluster)
    assert description.shape.dra and len(description.hosts) == 200
    gangs = draw_gangs(workload, description.gpus)
    templates = {t["metadata"]["name"]: t for t in claim_templates(workload, gangs, "H100")}
    for gang in gangs:
        group, *ours = gang_objects("phalanx", workload, gang)
        theirs = gang_objects("kube-scheduler", workload, gang)
        assert group["spec"]["topology"]["required"] == "rack"
        assert group["spec"]["minMember"] == gang.pods == len(theirs)
        for mine, other in zip(ours, theirs, strict=True):
            assert mine["spec"]["schedulerName"] == "phalanx"
            assert other["spec"]["schedulerName"] == "default-scheduler"
            same = copy.deepcopy(mine)
            same["spec"]["schedulerName"] = "default-scheduler"
            del same["metadata"]["labels"]["scheduling.phalanx.io/pod-group"]
            assert same == other
            (entry,) = other["spec"]["resourceClaims"]
            template = templates[entry["resourceClaimTemplateName"]]
            assert entry["resourceClaimTemplateName"] == template_name(gang.gpus_per_pod)
            (request,) = template["spec"]["spec"]["devices"]["requests"]
            assert request["exactly"]["count"] == gang.gpus_per_pod
            assert "nvidia.com/gpu" not in str(other)  # GPUs only through the claim
