"""A pod the API server bound stays assumed until the watch shows it, however late: at
12,500 nodes the watch lagged ~200 s and, with a timer, half the pods were placed again
(their second bindings refused, 409). An un-gated pod still expires (kube-scheduler has
yet to bind it), and a pod made since under the same name is not the one assumed."""

from __future__ import annotations

from typing import Any

from phalanx.operator.assumed import AssumedPods


def pod(uid: str = "u1", node: str = "") -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": uid},
            "spec": {"nodeName": node} if node else {}}


def test_a_bound_pod_stays_assumed_past_the_ttl_until_the_watch_shows_it() -> None:
    assumed = AssumedPods(60)
    assumed.assume("ns/p", "n1", uid="u1")
    assumed.written("ns/p", now=0.0, final=True)
    assumed.expire({"ns/p": pod()}, now=600.0)  # the watch still shows it pending
    assert assumed.node_of("ns/p") == "n1"
    assumed.expire({"ns/p": pod(node="n1")}, now=601.0)
    assert "ns/p" not in assumed


def test_an_ungated_pod_expires_after_the_ttl() -> None:
    assumed = AssumedPods(60)
    assumed.assume("ns/p", "n1", uid="u1")
    assumed.written("ns/p", now=0.0)
    assumed.expire({"ns/p": pod()}, now=59.0)
    assert "ns/p" in assumed
    assumed.expire({"ns/p": pod()}, now=60.0)
    assert "ns/p" not in assumed


def test_a_pod_made_again_under_the_same_name_is_not_held() -> None:
    assumed = AssumedPods(60)
    assumed.assume("ns/p", "n1", uid="u1")
    assumed.written("ns/p", now=0.0, final=True)
    assumed.expire({"ns/p": pod(uid="u2")}, now=1.0)
    assert "ns/p" not in assumed
