"""Gate mode narrows node affinity as Kubernetes allows for gated pods, and lifts our gate."""

from __future__ import annotations

from operator_fakes import pod

from phalanx.operator.gates import ungate_patch


def test_pod_without_affinity_gets_one_term_for_its_node():
    patch = ungate_patch(pod("a", gated=True), "node-7")
    spec = patch["spec"]
    assert spec["schedulingGates"] is None
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    assert terms == [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["node-7"]}]}]


def test_existing_terms_are_only_narrowed_and_other_gates_kept():
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
    body = pod("a", gated=True, affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term, term]}}})
    body["spec"]["schedulingGates"].append({"name": "example.com/other"})
    spec = ungate_patch(body, "n1")["spec"]
    assert spec["schedulingGates"] == [{"name": "example.com/other"}]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    assert len(terms) == 2
    for narrowed in terms:
        assert narrowed["matchExpressions"] == term["matchExpressions"]
        assert narrowed["matchFields"] == [
            {"key": "metadata.name", "operator": "In", "values": ["n1"]}]
